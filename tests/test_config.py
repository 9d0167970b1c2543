"""loopgate.yaml validation: one schema for the whole file, errors name the key's path."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import default_db_path, load_config, validate_mapping
from engine.errors import ConfigError


def test_defaults_fill_every_section() -> None:
    cfg = validate_mapping({})
    assert cfg.data["executeKeyword"] == "the-loop execute"
    assert cfg.data["specDir"] == "docs/specs"
    assert cfg.section("github")["tokenEnv"] == "GITHUB_TOKEN"
    assert cfg.section("server") == {"host": "127.0.0.1", "port": 8787, "metrics": True,
                                     "queueStallMinutes": 10,  # issue 13: /metrics, /readyz
                                     # issue 22 §2: off until signIn.clientId is set
                                     "signIn": {"clientSecretEnv": "LOOPGATE_CLIENT_SECRET",
                                                "sessionSecretEnv": "LOOPGATE_SESSION_SECRET",
                                                "webUrl": "https://github.com",
                                                "sessionHours": 8,
                                                "accessCacheSeconds": 60}}
    assert cfg.section("slack")["apiUrl"] == "https://slack.com/api/"
    assert not cfg.has("github")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"slack": {"chanel": "C1"}}, "unknown key slack.chanel"),
        ({"github": {"repos": ["acme/widgets"], "pollInterval": 5}},
         "unknown key github.pollInterval"),
        ({"authorisedUsers": ["a"]}, "unknown key authorisedUsers"),
        ({"server": {"port": "eighty"}}, "server.port"),
        ({"github": {"repos": ["not a repo"]}}, "github.repos.0"),
    ],
)
def test_invalid_config_names_the_key_path(raw: dict, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate_mapping(raw)
    assert message in str(err.value)


def test_load_config_reads_yaml_and_resolves_workspace(tmp_path: Path) -> None:
    file = tmp_path / "loopgate.yaml"
    file.write_text("authorizedUsers: ['@Alice']\nworkspace: repo\n", "utf-8")
    cfg = load_config(file)
    assert cfg.engine_settings().is_authorized("alice")
    assert cfg.workspace == (tmp_path / "repo").resolve()


def test_missing_explicit_config_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")


def test_db_path_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("LOOPGATE_DB", raising=False)
    assert default_db_path() == tmp_path / "state" / "loopgate" / "loopgate.db"
    monkeypatch.setenv("LOOPGATE_DB", str(tmp_path / "env.db"))
    assert default_db_path() == tmp_path / "env.db"
    assert default_db_path(explicit=str(tmp_path / "flag.db")) == tmp_path / "flag.db"


def test_an_app_bot_login_without_its_suffix_is_refused_naming_the_key() -> None:
    # Review finding F4: "loopgate" is GraphQL's spelling of the App's bot, but as
    # botLogin it would also name a User called loopgate.
    from bot.config import validate_mapping
    from engine.errors import ConfigError

    app = {"appId": 1, "privateKeyEnv": "KEY"}
    with pytest.raises(ConfigError, match=r"github\.botLogin: a GitHub App posts as its bot "
                                          r"loopgate\[bot\]"):
        validate_mapping({"github": {"app": app, "botLogin": "loopgate"}})
    config = validate_mapping({"github": {"app": app, "botLogin": "loopgate[bot]"}})
    assert config.section("github")["botLogin"] == "loopgate[bot]"


def test_a_relative_database_path_resolves_against_the_config_files_folder(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("LOOPGATE_DB", "LOOPGATE_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    project = tmp_path / "project"
    project.mkdir()
    (project / "loopgate.yaml").write_text("database: data/state.db\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = load_config(project / "loopgate.yaml")
    assert default_db_path(config) == project / "data" / "state.db"
    monkeypatch.setenv("LOOPGATE_DB", "env.db")  # an environment value stays cwd-relative
    assert default_db_path(config) == Path("env.db")


def test_a_duplicate_key_is_refused_with_file_and_line(tmp_path: Path) -> None:
    file = tmp_path / "loopgate.yaml"
    file.write_text("authorizedUsers: [alice]\ngithub:\n  repos: [a/b]\n  repos: [c/d]\n")
    with pytest.raises(ConfigError) as caught:
        load_config(file)
    assert str(caught.value) == (f"{file}:4:3: not valid YAML: duplicate key 'repos' "
                                 "(first at line 3)")
    file.write_text("authorizedUsers: [alice]\nloop: pdlc-work-item-loop\n"
                    "authorizedUsers: [bob]\n")
    with pytest.raises(ConfigError) as caught:
        load_config(file)
    assert str(caught.value) == (f"{file}:3:1: not valid YAML: duplicate key "
                                 "'authorizedUsers' (first at line 1)")


def test_merge_gate_vouching_reaches_the_engine_settings() -> None:
    # Issue 19 §3: mergeGate.vouching (empty = from code-quiz to the merge node).
    assert validate_mapping({}).engine_settings().merge_gate_vouching == ()
    cfg = validate_mapping({"mergeGate": {"vouching": ["code-quiz", "human-approval"]}})
    assert cfg.engine_settings().merge_gate_vouching == ("code-quiz", "human-approval")
    with pytest.raises(ConfigError, match="vouching"):
        validate_mapping({"mergeGate": {"vouching": "human-approval"}})


def test_server_public_url_reaches_the_engine_without_its_trailing_slash() -> None:
    # Issue 22 §1: the loopgate check links <publicUrl>/items/<owner>/<repo>/<n>.
    cfg = validate_mapping({"server": {"publicUrl": "https://loopgate.example.com/lg/"}})
    assert cfg.engine_settings().public_url == "https://loopgate.example.com/lg"
    assert validate_mapping({}).engine_settings().public_url == ""
    for bad in ("loopgate.example.com", "https://", "https://x.example/a b", "ftp://x.example"):
        with pytest.raises(ConfigError) as err:
            validate_mapping({"server": {"publicUrl": bad}})
        assert "server.publicUrl" in str(err.value), bad
