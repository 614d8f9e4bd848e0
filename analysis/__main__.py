"""``python -m analysis`` was never one program: one line naming the front door, exit 2."""

if __name__ == "__main__":  # a program: its imports are the front door's
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("analysis"))
