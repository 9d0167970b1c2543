"""github-app-manifest.json (issue 9 §3): the fields of GitHub's App-manifest flow, the
events loopgate takes, and exactly the permissions the code's calls need (least
privilege): a REST path added to the bridge without a permission here fails the test."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
LEVELS = {"read": 1, "write": 2}
#: REST paths as the bridge writes them ({…} = a placeholder) -> the permission they need.
#: Comments and labels on a pull request go through the issues API, and GitHub checks them
#: against ``pull_requests``: loopgate comments on pull requests (the code quiz, the
#: human-approval review request), so both need write.
REST = {
    "/repos/{}": [("metadata", "read")],
    "/repos/{}/issues": [("issues", "read")],
    "/repos/{}/issues/comments": [("issues", "read"), ("pull_requests", "read")],
    "/repos/{}/issues/comments/{}": [("issues", "read"), ("pull_requests", "read")],
    "/repos/{}/issues/{}": [("issues", "read"), ("pull_requests", "read")],
    "/repos/{}/issues/{}/comments": [("issues", "write"), ("pull_requests", "write")],
    "/repos/{}/pulls": [("pull_requests", "read")],
    "/repos/{}/pulls/{}": [("pull_requests", "read")],
    "/repos/{}/contents/{}": [("contents", "read")],
    # Issue 11 §1: an App publishes the loopgate check as a check run; commit statuses
    # are written in token mode only, so the App needs no statuses permission.
    "/repos/{}/statuses/{}": [],
    # Issue 22 §3: verify reads the statuses it posted, in token mode only (an App's
    # published check is its check run, read above).
    "/repos/{}/commits/{}/statuses": [],
    "/repos/{}/commits/{}/check-runs": [("checks", "read")],
    "/repos/{}/check-runs": [("checks", "write")],
    "/repos/{}/check-runs/{}": [("checks", "write")],
    # Issue 19 §4: a merge group's commits.
    "/repos/{}/compare/{}...{}": [("contents", "read")],
    # Issue 24 §1: a pull request's changed files, for code owners as approvers.
    "/repos/{}/pulls/{}/files": [("pull_requests", "read")],
    # Issue 24 §3: review requests ("Pull requests" repository permissions (write),
    # docs.github.com/en/rest/pulls/review-requests).
    "/repos/{}/pulls/{}/requested_reviewers": [("pull_requests", "write")],
    # Issue 24 §2: a pull request's commits, for agent authorship.
    "/repos/{}/pulls/{}/commits": [("pull_requests", "read")],
}
#: Organization paths (issue 11 §2: teams named in approval rules) -> permission.
ORGS = {
    "/orgs/{}/teams/{}": [("members", "read")],
    "/orgs/{}/teams/{}/memberships/{}": [("members", "read")],
}
#: PyGithub calls the client makes besides raw paths (labels, one at a time).
PYGITHUB = {
    "add_to_labels": [("issues", "write"), ("pull_requests", "write")],
    "remove_from_labels": [("issues", "write"), ("pull_requests", "write")],
    "get_labels": [("issues", "read")],
}
#: GraphQL queries -> what they read.
GRAPHQL = {
    "comment_edits": [("issues", "read"), ("pull_requests", "read")],
    "delivering_pull_requests": [("pull_requests", "read")],
    "pull_request_items": [("pull_requests", "read")],
    # Issue 19 §4: the merge queue's entries (which pull requests a group holds).
    "merge_queue_entries": [("merge_queues", "read"), ("pull_requests", "read")],
}
#: Webhook events loopgate subscribes to -> the permission GitHub requires for them.
EVENTS = {"issues": "issues", "issue_comment": "issues", "pull_request": "pull_requests",
          # Issue 19 §4: GitHub sends merge_group to Apps with "Merge queues" read.
          "merge_group": "merge_queues"}
_PATH = re.compile(r'f"(/repos/\{[^"]*)"')


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    return json.loads((ROOT / "github-app-manifest.json").read_text("utf-8"))


def _needed() -> dict[str, str]:
    need: dict[str, str] = {}
    for grants in (*REST.values(), *ORGS.values(), *PYGITHUB.values(), *GRAPHQL.values()):
        for permission, level in grants:
            if LEVELS[level] > LEVELS.get(need.get(permission, ""), 0):
                need[permission] = level
    return need


def _rest_paths() -> set[str]:
    found = set()
    for name in ("client.py", "poller.py"):
        text = (ROOT / "bridges" / "github" / name).read_text("utf-8")
        for literal in _PATH.findall(text):
            path = re.sub(r"\{[^}]*\}", "{}", literal).replace("{}/{}", "{}", 1)
            found.add(path)
    return found


def test_the_manifest_has_the_fields_of_githubs_manifest_flow(manifest: dict[str, Any]) -> None:
    assert set(manifest) <= {"name", "url", "description", "hook_attributes", "redirect_url",
                             "callback_urls", "setup_url", "setup_on_update", "public",
                             "default_events", "default_permissions",
                             "request_oauth_on_install"}
    assert manifest["name"] == "loopgate" and manifest["public"] is False
    assert manifest["url"].startswith("https://")
    assert manifest["hook_attributes"] == {"url": "https://YOUR-HOST/github/webhook",
                                           "active": True}
    assert manifest["redirect_url"].startswith("https://YOUR-HOST/")


def test_the_manifest_subscribes_to_the_events_loopgate_takes(manifest: dict[str, Any]) -> None:
    assert manifest["default_events"] == ["issues", "issue_comment", "pull_request",
                                          "merge_group"]
    for event in manifest["default_events"]:
        assert EVENTS[event] in manifest["default_permissions"]


def test_the_manifest_asks_exactly_the_permissions_the_code_needs(
        manifest: dict[str, Any]) -> None:
    assert manifest["default_permissions"] == {"issues": "write", "pull_requests": "write",
                                               "contents": "read", "metadata": "read",
                                               "checks": "write", "members": "read",
                                               "merge_queues": "read"}
    # merge_queues is asked for the merge_group event and the merge_queue_entries query.
    needed = {**_needed(), **{EVENTS[e]: "read" for e in manifest["default_events"]
                              if EVENTS[e] not in _needed()}}
    assert manifest["default_permissions"] == needed


def test_every_rest_path_the_bridge_calls_has_a_permission_here() -> None:
    paths = _rest_paths()
    assert "/repos/{}/issues/{}/comments" in paths  # the scan sees the client's paths
    assert paths <= set(REST), f"map these to a permission: {sorted(paths - set(REST))}"
    client = (ROOT / "bridges" / "github" / "client.py").read_text("utf-8")
    used = set(re.findall(r"\.(add_to_labels|remove_from_labels|get_labels)\(", client))
    assert used == set(PYGITHUB)
    queries = {p.stem for p in (ROOT / "bridges" / "github" / "queries").glob("*.graphql")}
    assert queries == set(GRAPHQL)
