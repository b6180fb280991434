from tests.workflows.conftest import env, private_dirs  # noqa: F401  (the git tracker project)
