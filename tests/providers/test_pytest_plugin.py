"""The pytest plugin users get with the package: ``simulated_server`` and ``fake_clock``."""

from __future__ import annotations

import pytest

from orchestrator.testing import FakeClock
from providers.simulator import SimulatedServer

pytest_plugins = ["pytester"]

USER_TESTS = """
from orchestrator import FallbackAgent
from providers import OpenAIChat
from providers.simulator import Fault


def _provider(server, name):
    return OpenAIChat("gpt-4o-mini", base_url=server.openai_url, api_key="sk-test", name=name)


def test_a_retry_on_fake_time(simulated_server, fake_clock):
    simulated_server.script("openai", [Fault.status(503)])
    agent = FallbackAgent(
        [_provider(simulated_server, "primary"), _provider(simulated_server, "backup")],
        clock=fake_clock,
        max_retries=1,
        retry_delay=5,  # under the default hedge's 10 s: the backup is not started meanwhile
    )
    result = agent.run_sync("hi")
    assert result.handled_by == "primary"
    assert fake_clock.sleeps and fake_clock.sleeps[0] > 0  # the backoff, without waiting
    assert simulated_server.count("openai") == 2


def test_each_test_gets_a_reset_server(simulated_server):
    assert simulated_server.count() == 0
    assert simulated_server.pending("openai") == 0
    simulated_server.script("openai", [Fault.status(500)])


PORTS = []


def test_the_same_server_for_the_session_1(simulated_server):
    PORTS.append(simulated_server.port)


def test_the_same_server_for_the_session_2(simulated_server):
    assert PORTS == [simulated_server.port]
"""


def test_pytest_fixtures_lists_them(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("--fixtures")
    out = result.stdout.str()
    assert "simulated_server" in out and "fake_clock" in out
    assert "A started simulated provider server, reset for this test" in out
    assert "A fresh fake clock for this test" in out


def test_a_users_tests_pass_with_them(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user_chain=USER_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=4)


def test_the_plugin_can_be_turned_off(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_off="def test_off(simulated_server):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:failover")
    result.assert_outcomes(errors=1)
    assert "fixture 'simulated_server' not found" in result.stdout.str()


def test_this_suite_gets_the_plugins_fixtures_too(
    simulated_server: SimulatedServer, fake_clock: FakeClock
) -> None:
    assert simulated_server.count() == 0 and fake_clock.now() == 0.0
