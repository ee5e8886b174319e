"""``failover run --run-id``, ``failover runs list|show``, ``journal:`` in the chain file,
``--input NAME=@FILE``, and the journal's URL forms and stored names."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.config import load_config
from orchestrator.journal import JournalError, SQLiteJournal, open_journal
from orchestrator.journal.sql import SCHEMA_VERSION
from providers.simulator import Fault, SimulatedServer
from tests.conftest import simulated_chain

CHAIN = """
    providers:
      codex: {type: openai, model: sim-codex, price: [1, 2]}
    agents:
      first: {providers: [codex], max_retries: 0}
    journal: state/journal.db
    workflows:
      review:
        phases:
          - name: One
            steps:
              - {name: a, agent: first, prompt: "Review {diff}"}
              - {name: b, agent: first, prompt: "Sum {a.text}"}
    """


@pytest.fixture
def chain(
    tmp_path: Path, simulated_server: SimulatedServer, monkeypatch: pytest.MonkeyPatch
) -> Path:
    (tmp_path / "pr.diff").write_text("+fix\n")
    return simulated_chain(tmp_path, CHAIN, simulated_server, monkeypatch)


def test_run_id_journals_in_the_chain_files_journal_and_runs_shows_it(
    chain: Path, simulated_server: SimulatedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    simulated_server.script("openai", [Fault.ok("first", usage=(100, 10))])
    argv = ["run", str(chain), "--workflow", "review", "--run-id", "pr-1", "--json"]
    argv += ["--input", f"diff=@{chain.parent / 'pr.diff'}"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == first["steps"]
    assert simulated_server.count("openai") == 2  # the second run sent nothing
    assert "Review +fix" in simulated_server.requests("openai")[0]["body"]["messages"][0]["content"]
    journal = chain.parent / "state" / "journal.db"  # relative to the chain file
    assert main(["runs", "list", "--journal", str(journal), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert (run["run_id"], run["status"], run["done"], run["steps"]) == ("pr-1", "done", 2, 2)
    assert run["cost_usd"] > 0
    assert main(["runs", "show", "pr-1", "--journal", str(journal), "--plain"]) == 0
    out = capsys.readouterr().out
    assert "run pr-1 (workflow review): done, 2/2 steps done, $" in out
    assert "a     done   codex" in out and "100/10" in out
    assert main(["runs", "show", "nope", "--journal", str(journal)]) == 1


def test_journal_flags_are_checked_before_anything_is_sent(
    chain: Path, simulated_server: SimulatedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["run", str(chain), "--workflow", "review", "--input", "diff=x"]
    assert main([*base, "--journal", "j.db"]) == 2
    assert "--run-id" in capsys.readouterr().err
    assert main([*base, "--run-id", "bad id!"]) == 2
    assert "run_id" in capsys.readouterr().err
    assert main(["run", str(chain), "--workflow", "review", "--input", "diff=@/nonexistent"]) == 2
    assert "cannot read it" in capsys.readouterr().err
    assert main([*base, "--run-id", "r", "--journal", "mysql://u:hunter2@h/db"]) == 1
    err = capsys.readouterr().err
    assert "mysql:// is not a journal" in err and "hunter2" not in err
    assert simulated_server.count() == 0


def test_a_changed_input_is_refused_with_the_flag_to_use(
    chain: Path, simulated_server: SimulatedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["run", str(chain), "--workflow", "review", "--run-id", "r"]
    assert main([*base, "--input", "diff=one"]) == 0
    assert main([*base, "--input", "diff=two"]) == 1
    assert "--restart-changed" in capsys.readouterr().err
    assert simulated_server.count("openai") == 2
    assert main([*base, "--input", "diff=two", "--restart-changed"]) == 0
    assert simulated_server.count("openai") == 4


def test_the_chain_files_journal_reaches_its_workflows(chain: Path) -> None:
    config = load_config(chain)
    assert config.workflows["review"].journal == str(chain.parent / "state" / "journal.db")
    text = chain.read_text().replace(
        'prompt: "Sum {a.text}"}',
        'prompt: "Sum {a.text}", on_interrupted: fail, mid_stream: continue}',
    )
    chain.write_text(text)
    b = [s for _, steps in load_config(chain).workflows["review"].steps_by_node() for s in steps][1]
    assert (b.name, b.on_interrupted, b.mid_stream) == ("b", "fail", "continue")


def test_journal_urls(tmp_path: Path) -> None:
    store, owned = open_journal(f"sqlite:///{tmp_path}/a.db")
    assert isinstance(store, SQLiteJournal) and owned and store.path == tmp_path / "a.db"
    same, owned = open_journal(store)
    assert same is store and not owned
    with pytest.raises(JournalError, match=r"^journal: redis:// is not a journal"):
        open_journal("redis://:secret@host/0")
    with pytest.raises(TypeError):
        open_journal(3)  # type: ignore[arg-type]


def test_the_stored_names_are_pinned(tmp_path: Path) -> None:
    """Renaming a column or a state strands runs in flight in users' journals: a new
    name needs a migration (and SCHEMA_VERSION + 1), not a refactor."""
    store = SQLiteJournal(tmp_path / "j.db")
    store.claim("r", "w", "h:1:x")
    store.record_started("r", "a", "fp")
    store.record_started("r", "b", "fp")
    store.record_done("r", "a", "fp", {"text": "t"})
    store.record_failed("r", "b", "fp", "ServerError")
    db = sqlite3.connect(tmp_path / "j.db")
    columns = {t: [r[1] for r in db.execute(f"PRAGMA table_info({t})")] for t in ("runs", "steps")}
    assert columns == {
        "runs": [
            "run_id",
            "workflow",
            "status",
            "holder",
            "heartbeat_at",
            "created_at",
            "updated_at",
        ],
        "steps": [
            "run_id",
            "step",
            "status",
            "fingerprint",
            "started_at",
            "finished_at",
            "result",
            "partial",
            "error",
        ],
    }
    assert dict(db.execute("SELECT step, status FROM steps")) == {"a": "done", "b": "failed"}
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 1
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
