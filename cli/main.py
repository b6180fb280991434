import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "tracker":
        # imported lazily: `mailtriage tracker` must not load the TUI
        from mailtriage.trackers.cli import main as tracker_main

        return tracker_main(argv[1:])
    print("mailtriage")
    return 0
