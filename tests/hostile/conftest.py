from tests.application.flows.conftest import env, env_template, private_dirs  # noqa: F401  (the git tracker project)
