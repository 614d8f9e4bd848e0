"""The benchmark matrices as data: a cell is one point of the named axes.

The cells of a built-in or given matrix (``plan``), the matrix file's format (``schema``) and
its reading (``file``, ``yaml_loader``).
"""
