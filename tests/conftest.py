"""Shared pytest fixtures: the local API server and the AWS stand-ins live in tests/fixtures."""

pytest_plugins = [
    "tests.fixtures.envtest",
    "tests.fixtures.aws",
]
