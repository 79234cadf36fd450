"""No input dropped silently on /no_follow: over the limit is refused whole with its reason
beside the field; skipped block-list lines and repeated names are counted on screen."""

from __future__ import annotations

import html
import io
import re

from sqlalchemy import text

from tests.unit.test_panel_support import post_form
from webpanel.entry_input import MAX_NAMES

pytest_plugins = ["tests.unit.test_panel_support"]

BLOCK_LIST = "\n".join(
    [
        "! an Adblock comment",
        "# a hosts-file comment",
        "||a.paste.test^",
        "@@||ok.paste.test^",
        "example.org##.ad",
        "/ads[0-9]+/",
        "0.0.0.0 b.paste.test",
        "c.paste.test",
        "c.paste.test",
    ]
)
COUNTED = (
    "5 lines skipped (2 comment, 1 @@ exception, 1 cosmetic rule, 1 regular expression);"
    " 1 repeated name counted once"
)


def entries(db) -> int:
    with db.connect() as conn:
        return conn.execute(
            text("SELECT count(*) FROM queue WHERE status_reason IS NOT NULL")
        ).scalar_one()


def beside(page: str, field_id: str) -> str:
    """The errors shown beside a field (the field_errors macro's list)."""
    found = re.search(rf'id="{field_id}-errors"[^>]*>(.*?)</ul>', page, re.S)
    assert found, f"no errors beside {field_id}"
    return html.unescape(found.group(1))


def test_a_paste_over_the_limit_is_refused_whole_with_the_reason_beside_the_field(client, db):
    names = "\n".join(f"n{i}.paste.test" for i in range(MAX_NAMES + 1))
    for button in ("preview", "save"):
        response = post_form(client, "/no_follow", {"entries": names, button: button})
        assert response.status_code == 400
        said = beside(response.get_data(as_text=True), "entries")
        assert f"{MAX_NAMES + 1:,} names: at most {MAX_NAMES:,}" in said
        assert "nothing was saved" in said and "no-follow add -f FILE" in said
    assert entries(db) == 0


def test_a_paste_at_the_limit_is_saved_whole(client, db):
    names = "\n".join(f"n{i}.paste.test" for i in range(MAX_NAMES))
    saved = post_form(client, "/no_follow", {"entries": names, "save": "Save"})
    assert saved.status_code == 200
    assert f"added {MAX_NAMES}, already present 0, refused 0" in saved.get_data(as_text=True)
    assert entries(db) == MAX_NAMES


def test_skipped_block_list_lines_are_counted_in_the_preview_and_the_summary(client, db):
    preview = post_form(client, "/no_follow", {"entries": BLOCK_LIST, "preview": "Preview"})
    assert preview.status_code == 200
    assert COUNTED in html.unescape(preview.get_data(as_text=True))
    saved = post_form(client, "/no_follow", {"entries": BLOCK_LIST, "save": "Save"})
    page = html.unescape(saved.get_data(as_text=True))
    assert "added 3, already present 0, refused 0" in page
    assert COUNTED in page
    assert entries(db) == 3


def test_a_csv_import_over_the_limit_is_refused_whole_beside_the_file_field(client, db):
    rows = "hostname,note\n" + "".join(f"n{i}.csv.test,x\n" for i in range(MAX_NAMES + 1))
    upload = {"file": (io.BytesIO(rows.encode()), "big.csv"), "preview": "Preview import"}
    previewed = post_form(client, "/no_follow/import", upload, content_type="multipart/form-data")
    assert previewed.status_code == 400
    said = beside(previewed.get_data(as_text=True), "file")
    assert f"{MAX_NAMES + 1:,} names: at most {MAX_NAMES:,}" in said
    saved = post_form(client, "/no_follow/import", {"csv_text": rows, "save": "Import"})
    assert saved.status_code == 400
    assert "nothing was saved" in beside(saved.get_data(as_text=True), "file")
    assert entries(db) == 0


def test_a_csv_imports_comment_rows_are_counted(client, db):
    rows = "hostname,note\n# from the old list\nx.csv.test,first\n#y.csv.test,off\n"
    upload = {"file": (io.BytesIO(rows.encode()), "list.csv"), "preview": "Preview import"}
    previewed = post_form(client, "/no_follow/import", upload, content_type="multipart/form-data")
    assert "2 lines skipped (2 comment)" in previewed.get_data(as_text=True)
    saved = post_form(client, "/no_follow/import", {"csv_text": rows, "save": "Import"})
    page = saved.get_data(as_text=True)
    assert "added 1, already present 0, refused 0" in page
    assert "2 lines skipped (2 comment)" in page
