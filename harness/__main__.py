"""The form earlier docs used, ``python -m harness``: runs its verb."""

if __name__ == "__main__":  # a program: its imports are the front door's
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("harness"))
