import pytest

from fabscope.fabric.generators import itasca


@pytest.fixture(scope="session")
def itasca_fabric():
    return itasca()
