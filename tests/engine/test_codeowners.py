"""Issue 24 §1: CODEOWNERS parsing and matching as GitHub documents it (platform-facts F5;
GitHub Docs, *About code owners*: the example file's patterns and what each owns)."""

from __future__ import annotations

import pytest

from engine.codeowners import LOOKUP, Ownership, ownership, owns, parse, render_errors, uncovered

# GitHub's documented example, trimmed (the line numbers below are this text's).
EXAMPLE = """\
# This is a comment.
*       @global-owner1 @global-owner2
*.js    @js-owner #This is an inline comment.
*.go docs@example.com
*.txt @octo-org/octocats
/build/logs/ @doctocat
docs/*  docs@example.com
apps/ @octocat
/docs/ @doctocat
/scripts/ @doctocat @octocat
**/logs @octocat
/apps/ @octocat
/apps/github
"""


@pytest.mark.parametrize(("path", "owners"), [
    ("README.md", ("@global-owner1", "@global-owner2")),        # * matches everything
    ("src/deep/app.js", ("@js-owner",)),                         # *.js at any depth
    ("notes/a.txt", ("@octo-org/octocats",)),                    # a team
    ("main.go", ()),                                             # e-mail only: ignored
    ("build/logs/today.txt", ("@octocat",)),                     # **/logs wins: last
    ("docs/getting-started.md", ("@doctocat",)),                 # /docs/ is later
    ("scripts/run.sh", ("@doctocat", "@octocat")),
    ("deeply/nested/logs/x.log", ("@octocat",)),                 # **/logs at any depth
    ("web/apps/x.rb", ("@octocat",)),                            # apps/ anywhere
    ("apps/github/x.rb", ()),                                    # no owners: unowned
    ("apps/other/x.rb", ("@octocat",)),
])
def test_the_documented_example_owns_what_github_says(path: str,
                                                      owners: tuple[str, ...]) -> None:
    assert parse(EXAMPLE).owners_of(path) == owners


def test_docs_star_owns_the_files_in_docs_and_not_deeper() -> None:
    owners = parse("* @all\ndocs/* @writer\n")
    assert owners.owners_of("docs/getting-started.md") == ("@writer",)
    assert owners.owners_of("docs/build-app/troubleshooting.md") == ("@all",)


@pytest.mark.parametrize(("pattern", "yes", "no"), [
    ("docs/**", ["docs/a.md", "docs/x/y/z.md"], ["src/docs/a.md", "docs"]),
    ("/src/**/*.py", ["src/a.py", "src/x/y/b.py"], ["lib/src/a.py", "src/a.pyc"]),
    ("lib", ["lib", "lib/a.py", "x/lib/b.py"], ["library/a.py"]),
    ("/lib", ["lib/a.py"], ["x/lib/b.py"]),
    ("a?c.txt", ["abc.txt", "x/adc.txt"], ["ac.txt", "a/c.txt"]),
    ("\\#notes", ["#notes", "x/#notes/y"], ["notes"]),
    ("my\\ file.txt", ["my file.txt"], ["my"]),
])
def test_patterns(pattern: str, yes: list[str], no: list[str]) -> None:
    owners = parse(f"{pattern} @o\n")
    assert not owners.errors
    assert [p for p in yes if owners.owners_of(p)] == yes
    assert [p for p in no if owners.owners_of(p)] == []


def test_lines_github_rejects_are_named_with_their_numbers_and_skipped() -> None:
    text = ("* @a\n"
            "!vendor/ @b\n"
            "src/[ab].py @c\n"
            "lib/ not-an-owner\n"
            "\n"
            "tools/ @d\n")
    owners = parse(text, ".github/CODEOWNERS")
    assert render_errors(owners) == [
        ".github/CODEOWNERS:2: negation (!) is not supported in CODEOWNERS: !vendor/ @b",
        ".github/CODEOWNERS:3: character ranges ([ ]) are not supported in CODEOWNERS: "
        "src/[ab].py @c",
        ".github/CODEOWNERS:4: 'not-an-owner' is neither @user, @org/team nor an e-mail "
        "address: lib/ not-an-owner"]
    assert owners.owners_of("lib/x.py") == ("@a",)  # the bad line is skipped entirely
    assert owners.owners_of("tools/x.py") == ("@d",)  # the rest of the file applies


def test_email_owners_are_ignored_and_said() -> None:
    owners = parse("*.go docs@example.com @gopher\n")
    assert owners.owners_of("a.go") == ("@gopher",)
    assert owners.notes == ("line 1: e-mail owners ignored (no login known): "
                            "docs@example.com",)


def test_ownership_of_changed_files_and_who_owns() -> None:
    found = ownership(parse("* @lead\n/web/ @acme/web\n/web/vendor/\n", "CODEOWNERS"),
                      ["web/a.ts", "README.md", "web/vendor/lib.js", "web/a.ts"])
    assert found.files == (("README.md", ("@lead",)), ("web/a.ts", ("@acme/web",)),
                           ("web/vendor/lib.js", ()))
    assert found.owners == ("@lead", "@acme/web")
    teams = {("acme", "web"): {"wendy"}}

    def member(org: str, team: str, login: str) -> bool:
        return login in teams.get((org, team), set())

    assert owns("Wendy", found.owners, member) == (True, "acme/web", [])
    assert owns("lead", found.owners, member) == (True, "", [])
    assert owns("mallory", found.owners, member)[0] is False
    assert uncovered(found, ["lead"], member) == ("web/a.ts",)
    assert uncovered(found, ["lead", "wendy"], member) == ()


def test_a_failed_team_lookup_owns_nothing() -> None:
    def broken(org: str, team: str, login: str) -> bool:
        raise RuntimeError("502 from GitHub")

    assert owns("wendy", ("@acme/web",), broken) == (False, "", ["acme/web (502 from GitHub)"])
    assert uncovered({"a.ts": ("@acme/web",)}, ["wendy"], broken) == ("a.ts",)


def test_no_file_means_no_owners_and_says_where_it_looked() -> None:
    found = ownership(None, ["a.py"])
    assert found == Ownership(problem="no CODEOWNERS file in .github/CODEOWNERS, CODEOWNERS, "
                                      "docs/CODEOWNERS", files=(("a.py", ()),))
    assert LOOKUP == (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")


def test_describe_names_the_skipped_lines_after_the_owners() -> None:
    from engine.codeowners import ownership, parse

    owners = parse("* @lead\n!a @x\n[b] @y\nc @bad!owner\n", ".github/CODEOWNERS")
    text = ownership(owners, ["src/app.py"]).describe()
    assert text == (
        "the code owners of the changed files (@lead; skipped as GitHub skips them: "
        ".github/CODEOWNERS:2: negation (!) is not supported in CODEOWNERS: !a @x; "
        ".github/CODEOWNERS:3: character ranges ([ ]) are not supported in CODEOWNERS: "
        "[b] @y and 1 more)")
    assert ownership(parse("* @lead\n"), ["x"]).describe() == (
        "the code owners of the changed files (@lead)")
