"""The estimator's calibration split by origin (`tools/estimator/origin.py`, issue 15).

The held-out figures of docs/estimator.md are measured on text whose sources were never fitted
on: every text of one origin (a gettext domain in all its languages, a package with its
metadata, a file) must land in the same split, and each family must keep origins on both
sides.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parents[2] / "tools" / "estimator"))

import origin


def test_a_gettext_domain_is_one_origin_in_every_language() -> None:
    names = {
        origin.origin(f"/usr/share/locale/{lang}/LC_MESSAGES/coreutils.mo")
        for lang in ("ja", "ru", "de", "ar")
    }
    assert names == {"gettext:coreutils"}
    assert origin.origin("/usr/share/locale/ja/LC_MESSAGES/grep.mo") != "gettext:coreutils"


def test_a_package_and_its_metadata_are_one_origin() -> None:
    site = origin.SITE_DIRS[0]
    assert origin.origin(str(site / "PyYAML-6.0.2.dist-info" / "METADATA")) == "site:pyyaml"
    assert origin.origin(str(site / "pyyaml" / "loader.py")) == "site:pyyaml"
    assert origin.origin(str(site / "botocore" / "data" / "s3" / "2006-03-01" / "x.json")) == (
        "botocore:s3"
    )


def test_the_standard_library_by_package_and_its_tests_by_module() -> None:
    stdlib = origin.STDLIB
    assert origin.origin(str(stdlib / "email" / "parser.py")) == "stdlib:email"
    assert origin.origin(str(stdlib / "email" / "mime" / "text.py")) == "stdlib:email"
    a = origin.origin(str(stdlib / "test" / "test_email" / "test_email.py"))
    b = origin.origin(str(stdlib / "test" / "test_os" / "test_posix.py"))
    assert a != b


def test_documents_under_share_and_elsewhere() -> None:
    share = origin.SHARE
    assert origin.origin(str(share / "doc" / "libxml2" / "NEWS.md")) == "share:doc/libxml2"
    assert origin.origin(str(share / "doc" / "libxml2" / "x" / "README.md")) == (
        "share:doc/libxml2"
    )
    assert origin.origin(str(share / "vim" / "vim90" / "doc" / "help.txt")) != origin.origin(
        str(share / "vim" / "vim90" / "doc" / "channel.txt")
    )
    assert origin.origin("/var/log/dpkg.log") == "file:/var/log/dpkg.log"


@given(st.sets(st.text(min_size=1, max_size=20), max_size=60))
def test_held_out_is_stable_and_keeps_both_sides(names: set[str]) -> None:
    test = origin.held_out(names)
    assert test <= names
    assert test == origin.held_out(sorted(names, reverse=True))
    if len(names) >= 2:
        assert test
        assert test != names


def test_about_a_quarter_is_held_out() -> None:
    names = {f"gettext:domain{i}" for i in range(400)}
    share = len(origin.held_out(names)) / len(names)
    assert 0.18 <= share <= 0.32
