"""Settings: defaults ← config file ← env ← CLI, validated with one-line errors."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from infra.secrets import DEV_SECRET
from mechanisms.errors import BudgetExhaustedError, ConfigError
from streams.settings import add_arguments, load_settings

# these tests exercise the event-level unit (the thesis experiments); device-day
# settings are tested in test_settings_device_day.py
ENV = {"OCCUSTREAM_SECRET": "a-secret-of-enough-length", "OCCUSTREAM_PRIVACY_UNIT": "event"}


def parse(argv):
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args(argv)


def test_precedence_file_env_cli(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('tick_s = 600\nvalidity_s = 900\nmechanisms = ["laplace", "ttl"]\n')
    env = {**ENV, "OCCUSTREAM_VALIDITY_S": "1200", "KAFKA_BOOTSTRAP": "k:1"}
    s = load_settings(parse(["--config", str(cfg), "--validity-s", "1500"]), env)
    assert s.tick_s == 600 and s.validity_s == 1500 and s.mechanisms == ("laplace", "ttl")
    assert s.kafka_bootstrap == "k:1"
    s = load_settings(parse(["--config", str(cfg)]), env)
    assert s.validity_s == 1200


def test_json_config_and_unknown_key(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"partitions": 8}))
    assert load_settings(parse(["--config", str(cfg)]), ENV).partitions == 8
    cfg.write_text(json.dumps({"partitons": 8}))
    with pytest.raises(ConfigError, match="unknown setting"):
        load_settings(parse(["--config", str(cfg)]), ENV)


@pytest.mark.parametrize("env,match", [
    ({"OCCUSTREAM_TICK_S": "-5"}, "tick_s .*must be > 0"),
    ({"OCCUSTREAM_TICK_S": "five"}, "tick_s .*must be float"),
    ({"OCCUSTREAM_MECHANISMS": "laplace,bogus"}, "unknown"),
    ({"OCCUSTREAM_MIDE_ALGORITHM": "magic"}, "mide_algorithm"),
    ({"OCCUSTREAM_MIDE_BETA": "0.7"}, "mide_beta"),
    ({"OCCUSTREAM_HEARTBEAT_S": "10"}, "heartbeat_s"),
    ({"OCCUSTREAM_EVAL_MODE": "maybe"}, "eval_mode"),
])
def test_bad_values_are_one_line_config_errors(env, match):
    with pytest.raises(ConfigError, match=match) as exc:
        load_settings(None, {**ENV, **env})
    assert "\n" not in str(exc.value)


def test_secret_required_outside_demo(tmp_path):
    with pytest.raises(ConfigError, match="OCCUSTREAM_SECRET"):
        load_settings(None, {})
    assert load_settings(None, {}, demo=True).secret == DEV_SECRET
    f = tmp_path / "secret"
    f.write_text("file-secret-0123456789\n")
    s = load_settings(None, {"OCCUSTREAM_SECRET_FILE": str(f)})
    assert s.secret == b"file-secret-0123456789"
    assert "secret" not in json.dumps(s.public()).lower().replace("secret_file", "")
    with pytest.raises(ConfigError, match=">= 16"):
        load_settings(None, {"OCCUSTREAM_SECRET": "short"})


def test_budget_refuses_overspending_configuration():
    with pytest.raises(BudgetExhaustedError, match="requested"):
        load_settings(None, {**ENV, "OCCUSTREAM_LAPLACE_EPSILON": "4.5"})
    with pytest.raises(BudgetExhaustedError, match="device-day"):
        load_settings(None, {**ENV, "OCCUSTREAM_BUDGET_EPSILON_DAY": "100"})
    s = load_settings(None, {**ENV, "OCCUSTREAM_MECHANISMS": "laplace",
                             "OCCUSTREAM_MIDE": "false", "OCCUSTREAM_BUDGET_EPSILON_DAY": "288"})
    assert s.epsilon_per_tick() == 1.0


def test_worker_cli_bad_input_exits_nonzero_with_one_line():
    out = subprocess.run([sys.executable, "-m", "occustream.cli", "worker", "--tick-s", "0"],
                         capture_output=True, text=True, timeout=60,
                         env={"OCCUSTREAM_SECRET": "a-secret-of-enough-length", "PATH": ""})
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "tick_s" in out.stderr


def test_mide_parameters_that_deny_every_query_are_refused():
    from occupancy.buildings import load_site
    from streams.pipeline.release import Releaser

    site = load_site("dbh")
    bad = load_settings(None, {**ENV, "OCCUSTREAM_MIDE_ALGORITHM": "ppwlm"})
    with pytest.raises(ConfigError, match="denied"):
        Releaser(bad.release_config(), site)
    ok = load_settings(None, {**ENV, "OCCUSTREAM_MIDE_ALGORITHM": "ppwlm",
                              "OCCUSTREAM_MIDE_ALPHA": "8"})
    assert Releaser(ok.release_config(), site).mechanisms


def test_day_budget_charges_hourly_mide_once_per_hour():
    # 288 ticks of laplace + per-tick MIDE, and 24 hourly MIDE queries (not 288)
    cfg = {**ENV, "OCCUSTREAM_MECHANISMS": "laplace", "OCCUSTREAM_LAPLACE_EPSILON": "0.1",
           "OCCUSTREAM_MIDE_EPSILON_MAX": "0.1", "OCCUSTREAM_MIDE_HOURLY": "true"}
    honest = 288 * 0.1 + 288 * 0.1 + 24 * 0.1
    s = load_settings(None, {**cfg, "OCCUSTREAM_BUDGET_EPSILON_DAY": str(honest)})
    assert s.epsilon_per_day() == pytest.approx(honest)
    with pytest.raises(BudgetExhaustedError, match="device-day"):
        load_settings(None, {**cfg, "OCCUSTREAM_BUDGET_EPSILON_DAY": str(honest - 0.5)})


def test_hourly_mide_needs_a_tick_dividing_the_hour():
    with pytest.raises(ConfigError, match="tick_s .*divide 3600") as err:
        load_settings(None, {**ENV, "OCCUSTREAM_TICK_S": "420"})
    assert "\n" not in str(err.value)
    s = load_settings(None, {**ENV, "OCCUSTREAM_TICK_S": "420", "OCCUSTREAM_MIDE_HOURLY": "0"})
    assert s.tick_s == 420


def test_hpegasus_ledger_record_composes_levels_sequentially():
    from mechanisms.hierarchical import tree_from_paths
    from occupancy.buildings import load_site
    from streams.pipeline.release import Releaser

    site = load_site("dbh")
    s = load_settings(None, {**ENV, "OCCUSTREAM_MECHANISMS": "hpegasus",
                             "OCCUSTREAM_MIDE": "false"})
    rel = Releaser(s.release_config(), site)
    out, _ = rel.run(1_767_600_000.0, [3] * len(site.location_ids), [], {})
    (rec,) = out.ledger
    tree = tree_from_paths(site.hierarchy())
    h = tree.height
    assert h > 1
    assert rec["composition"] == "sequential"
    assert rec["parts"] == pytest.approx([s.hpegasus_epsilon / h] * h)
    assert sum(rec["parts"]) == pytest.approx(rec["epsilon"])
    assert rec["n_locations"] == tree.n_nodes > len(site.location_ids)


def test_public_settings_mask_url_credentials():
    s = load_settings(None, {**ENV, "REDIS_URL": "redis://:hunter2@db.example:6379/0",
                             "OCCUSTREAM_STATE_REDIS_URL": "redis://u:pw2@st.example:6379/1",
                             "KAFKA_BOOTSTRAP": "user:kpw@broker:9092"})
    pub = json.dumps(s.public())
    for secret in ("hunter2", "pw2", "kpw"):
        assert secret not in pub
    assert s.public()["redis_url"] == "redis://***@db.example:6379/0"
    assert s.redis_url == "redis://:hunter2@db.example:6379/0"  # the client still has it
