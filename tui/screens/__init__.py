"""Screens: main, help, backend console, first run."""
