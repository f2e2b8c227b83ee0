"""The versioning suites again, with cairnd's metadata on PostgreSQL (issue
25: both metadata engines).  The tests are those of test_s3_versioning.py
(the main file), test_s3_versioning_list.py and test_s3_versioning_conf.py
(listing order matters most on PostgreSQL, whose test cluster's default
collation is linguistic: pgharness.py), collected here a second time; only the module's server
differs: a throwaway PostgreSQL 15 cluster (tests/fleet/pgharness.py) and a
cairnd started with --meta postgresql://...  Skipped when the PostgreSQL
server binaries are not installed (scripts/deps.sh test installs them)."""
import os
import sys

import pytest

from conftest import Server, assert_no_sanitizer
from s3fixtures import S3Server, s3_args

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "fleet"))
import pgharness  # noqa: E402
from test_s3_versioning import *  # noqa: E402,F401,F403
from test_s3_versioning_list import *  # noqa: E402,F401,F403
from test_s3_versioning_conf import *  # noqa: E402,F401,F403

pytestmark = pytest.mark.skipif(not pgharness.available(),
                                reason="PostgreSQL 15 server binaries not installed")


@pytest.fixture(scope="module")
def s3srv(tmp_path_factory):  # noqa: F811 (this module's server is the point)
    with pgharness.PgCluster() as pg:
        uri = pg.create_db("versioning")
        d = tmp_path_factory.mktemp("s3pg")
        srv = Server(d / "data", args=s3_args(["--meta", uri]))
        srv.start(wait_for=("jay", "http"))
        try:
            yield S3Server(srv)
        finally:
            srv.stop()
        out = srv.output()
        assert_no_sanitizer(out)
        # The metadata went to PostgreSQL, not to a meta.db beside the data.
        assert not (d / "data" / "meta.db").exists()
