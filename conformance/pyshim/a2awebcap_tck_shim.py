"""pytest plugin that lets the A2A TCK run on Debian's Python packages.

run.sh loads it with ``-p a2awebcap_tck_shim`` (via PYTEST_ADDOPTS). It does two things and
nothing else:

* When A2A_TCK_PB2_DIR names a directory holding ``a2a_pb2.py`` and ``a2a_pb2_grpc.py``
  regenerated with the installed protoc, those modules stand in for the kit's checked-in
  ``specification.generated`` stubs, whose gencode demands protobuf >= 6.30 (Debian ships 3.21).
* When pytest-html is not installed, it accepts (and ignores) the ``--html`` and
  ``--self-contained-html`` options that the kit's run_tck.py always passes.
"""

from __future__ import annotations

import importlib
import os
import sys


def _install_stubs() -> None:
    pb2_dir = os.environ.get("A2A_TCK_PB2_DIR", "")
    if not pb2_dir:
        return
    if pb2_dir not in sys.path:
        sys.path.insert(0, pb2_dir)
    a2a_pb2 = importlib.import_module("a2a_pb2")
    a2a_pb2_grpc = importlib.import_module("a2a_pb2_grpc")
    sys.modules["specification.generated.a2a_pb2"] = a2a_pb2
    sys.modules["specification.generated.a2a_pb2_grpc"] = a2a_pb2_grpc
    try:
        generated = importlib.import_module("specification.generated")
    except ImportError:
        return
    generated.a2a_pb2 = a2a_pb2
    generated.a2a_pb2_grpc = a2a_pb2_grpc


_install_stubs()


def pytest_addoption(parser):  # noqa: ANN001, ANN201 - pytest hook
    try:
        import pytest_html  # noqa: F401
    except ImportError:
        group = parser.getgroup("a2awebcap-shim", "a2aWebCap TCK shim (pytest-html not installed)")
        group.addoption("--html", action="store", default=None, help="ignored: pytest-html is not installed")
        group.addoption(
            "--self-contained-html", action="store_true", default=False, help="ignored: pytest-html is not installed"
        )
