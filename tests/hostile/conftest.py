from tests.application.flows.conftest import env, private_dirs  # noqa: F401  (the git tracker project)
