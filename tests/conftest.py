"""The shared pytest fixtures and the suite's run options live in tests/support/fixtures (see
tests/README.md)."""

pytest_plugins = [
    "tests.support.fixtures.profiles",
    "tests.support.fixtures.bench",
    "tests.support.fixtures.envtest",
    "tests.support.fixtures.aws",
    "tests.support.fixtures.cluster",
    "tests.support.fixtures.tenancy",
    "tests.support.fixtures.heap",
]
