"""The triage flows, one module per flow, below the rest of the application layer: each builds
its proposal and writes nothing (the application service, application/service.py, runs them).
Shared by them: proposals, text, templates, threadindex, errors and open_project."""
