"""The chain file, unhappy paths: every error names file, line, field, value and the fix."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.config import ConfigError, load_config


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def error_of(path: Path, environ: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(path, environ=environ or {})
    return info.value


@pytest.fixture
def hooks(tmp_path: Path) -> Iterator[str]:
    name = f"errhooks_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text("def answer(request):\n    return 'ok'\nVALUE = 3\n")
    yield name
    sys.modules.pop(name, None)


def fn_provider(hooks: str) -> str:
    return f'  fn: {{type: function, path: "{hooks}:answer"}}\n'


# -- reading ------------------------------------------------------------------------


def test_missing_file_and_unknown_extension(tmp_path: Path) -> None:
    err = error_of(tmp_path / "nope.yaml")
    assert str(err) == f"{tmp_path / 'nope.yaml'}: no such file"
    err = error_of(write(tmp_path, "chain.json", "{}"))
    assert str(err).endswith("chain.json: unknown extension '.json'; use .yaml, .yml or .toml")


def test_yaml_syntax_error_has_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "chain.yaml", "providers:\n  a: {type: openai\nagents: {}\n")
    err = error_of(path)
    assert err.line == 3
    assert str(err).startswith(f"{path}:3: invalid YAML: ")


def test_toml_syntax_error_has_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "chain.toml", '[providers.a]\ntype = "openai"\nmodel = \n')
    err = error_of(path)
    assert err.line == 3
    assert str(err).startswith(f"{path}:3: invalid TOML: ")


def test_duplicate_yaml_keys_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "chain.yaml", "agents: {}\nproviders: {}\nagents: {}\n")
    assert str(error_of(path)) == (
        f"{path}:3: duplicate key 'agents' (first at line 1); each key may appear once"
    )


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "chain.yaml", "- a\n- b\n")
    assert "the file holds a list; expected a mapping" in str(error_of(path))


# -- validation ---------------------------------------------------------------------


def test_bad_strategy_in_a_reference_names_line_path_value_and_choices(
    tmp_path: Path, hooks: str
) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        "providers:\n" + fn_provider(hooks) + "agents:\n"
        "  review:\n"
        "    providers:\n"
        "      - fn\n"
        "      - ref: fn\n"
        "        retry_strategy: expo\n",
    )
    err = error_of(path)
    assert str(err) == (
        f"{path}:8: agents.review.providers[1].retry_strategy: "
        "'expo' is not one of exponential, linear, none"
    )
    assert err.problems[0].path == ("agents", "review", "providers", 1, "retry_strategy")


def test_same_error_in_toml_points_at_the_line(tmp_path: Path, hooks: str) -> None:
    path = write(
        tmp_path,
        "chain.toml",
        f"""
        [providers.fn]
        type = "function"
        path = "{hooks}:answer"

        [agents.review]
        max_retries = 1
        providers = ["fn", {{ ref = "fn", retry_strategy = "expo" }}]
        """,
    )
    assert str(error_of(path)) == (
        f"{path}:7: agents.review.providers[1].retry_strategy: "
        "'expo' is not one of exponential, linear, none"
    )


def test_toml_array_of_tables_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "chain.toml",
        """
        [[workflows.w.phases]]
        name = "one"
        [[workflows.w.phases.steps]]
        name = "a"
        agent = "x"
        [[workflows.w.phases]]
        name = "two"
        [[workflows.w.phases.steps]]
        name = "b"
        agnt = "x"
        """,
    )
    err = error_of(path)
    assert (
        str(err.problems[0])
        == f"{path}:8: workflows.w.phases[1].steps[0].agent: is required but missing"
    )
    assert str(err.problems[1]) == (
        f"{path}:10: workflows.w.phases[1].steps[0].agnt: unknown key "
        "(did you mean 'agent'?); allowed here: agent, continue_on_error, mid_stream, name, "
        "on_interrupted, prompt"
    )


def test_unknown_key_suggests_and_lists_allowed_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        """
        providers:
          codex:
            type: openai
            modle: gpt-4o
        """,
    )
    err = error_of(path)
    assert str(err.problems[1]) == (
        f"{path}:4: providers.codex.modle: unknown key (did you mean 'model'?); allowed here: "
        "accepts_prefill, allow_insecure_http, api_key, base_url, budget, catalogue, "
        "context_window, first_token_timeout, "
        "headers, idle_timeout, jitter, limits, max_delay, max_response_bytes, max_retries, "
        "max_tokens_param, model, price, retry_delay, "
        "retry_strategy, timeout, transport, type"
    )
    assert str(err.problems[0]) == f"{path}:2: providers.codex.model: is required but missing"


def test_unknown_top_level_key(tmp_path: Path) -> None:
    path = write(tmp_path, "chain.yaml", "agent: {}\n")
    assert str(error_of(path)) == (
        f"{path}:1: agent: unknown key (did you mean 'agents'?); "
        "allowed here: agents, gateway, journal, providers, workflows"
    )


def test_unknown_provider_type_lists_the_types(tmp_path: Path) -> None:
    path = write(tmp_path, "chain.yaml", "providers:\n  x:\n    type: opnai\n    model: m\n")
    assert str(error_of(path)) == (
        f"{path}:3: providers.x.type: 'opnai' is not one of openai, anthropic, gemini, "
        "azure_openai, bedrock, vertex_anthropic, vertex_gemini, http, claude_code, codex, "
        "gemini_cli, cli, function"
    )


def test_missing_type(tmp_path: Path) -> None:
    path = write(tmp_path, "chain.yaml", "providers:\n  x:\n    model: m\n")
    assert str(error_of(path)).startswith(
        f"{path}:2: providers.x.type: is required but missing; give one of openai, anthropic"
    )


def test_value_errors_name_value_and_rule(tmp_path: Path, hooks: str) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        "providers:\n" + fn_provider(hooks) + "agents:\n"
        "  a:\n"
        "    providers: [fn, 5]\n"
        "    max_retries: -1\n"
        "    retry_delay: soon\n"
        "    escalate_on_guardrail: maybe\n"
        "    on_fallback: not-an-import\n"
        "  b:\n"
        "    providers: []\n",
    )
    lines = str(error_of(path)).splitlines()
    assert lines == [
        f"{path}:5: agents.a.providers[1]: 5 is not a provider name or a mapping like "
        "{ref: NAME, max_retries: 1} or {agent: NAME}",
        f"{path}:6: agents.a.max_retries: -1 is not allowed; use a number >= 0",
        f"{path}:7: agents.a.retry_delay: 'soon' is not a number",
        f"{path}:8: agents.a.escalate_on_guardrail: 'maybe' is not true or false",
        f"{path}:9: agents.a.on_fallback: 'not-an-import' is not an import path; "
        "write 'package.module:name'",
        f"{path}:11: agents.b.providers: is empty; give at least 1",
    ]


def test_types_are_strict_in_yaml(tmp_path: Path, hooks: str) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        "providers:\n"
        "  o:\n"
        "    type: openai\n"
        "    model: m\n"
        '    timeout: "5"\n'
        "    max_retries: true\n"
        '    allow_insecure_http: "yes"\n'
        '    price: ["1", 2]\n' + fn_provider(hooks) + "agents:\n"
        "  a:\n"
        "    providers: [o, {ref: fn, max_retries: 1.5}]\n"
        '    retry_delay: "0.5"\n'
        '    health: "true"\n'
        "    schema_retries: 2.0\n",
    )
    assert str(error_of(path)).splitlines() == [
        f"{path}:5: providers.o.timeout: '5' is not a number (it is a string; write 5 "
        "without quotes)",
        f"{path}:6: providers.o.max_retries: true is not a whole number",
        f"{path}:7: providers.o.allow_insecure_http: 'yes' is not true or false",
        f"{path}:8: providers.o.price[0]: '1' is not a number (it is a string; write 1 "
        "without quotes)",
        f"{path}:12: agents.a.providers[1].max_retries: 1.5 is not a whole number",
        f"{path}:13: agents.a.retry_delay: '0.5' is not a number (it is a string; write 0.5 "
        "without quotes)",
        f"{path}:14: agents.a.health: 'true' is not true or false (it is a string; write "
        "true without quotes)",
        f"{path}:15: agents.a.schema_retries: 2.0 is not a whole number",
    ]


def test_types_are_strict_in_toml(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "chain.toml",
        """
        [providers.o]
        type = "openai"
        model = "m"
        max_retries = 2.0

        [providers.f]
        type = "function"
        path = "m:f"
        run_in_thread = 1
        """,
    )
    assert str(error_of(path)).splitlines() == [
        f"{path}:4: providers.o.max_retries: 2.0 is not a whole number",
        f"{path}:9: providers.f.run_in_thread: 1 is not true or false",
    ]


def test_only_values_from_the_environment_are_converted(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        "providers:\n"
        "  o:\n"
        "    type: openai\n"
        "    model: m\n"
        "    timeout: ${TIMEOUT}\n"
        "    max_retries: ${RETRIES}\n"
        "    allow_insecure_http: ${INSECURE}\n"
        "    base_url: http://10.0.0.5/v1\n",
    )
    env = {"TIMEOUT": "30", "RETRIES": "2", "INSECURE": "true"}
    config = load_config(path, environ=env)
    assert config.providers["o"].name == "o"
    lines = str(error_of(path, {**env, "RETRIES": "2.5", "INSECURE": "maybe"})).splitlines()
    assert lines == [
        f"{path}:6: providers.o.max_retries: the value of ${{RETRIES}} is not a whole number",
        f"{path}:7: providers.o.allow_insecure_http: the value of ${{INSECURE}} is not true "
        "or false",
    ]
    lines = str(error_of(path, {**env, "INSECURE": "off"})).splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"{path}:8: providers.o.base_url: 'http://10.0.0.5/v1' is a plain")


def test_reference_needs_exactly_one_target(tmp_path: Path, hooks: str) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        "providers:\n" + fn_provider(hooks) + "agents:\n  a:\n    providers: [{max_retries: 1}]\n",
    )
    assert str(error_of(path)) == (
        f"{path}:5: agents.a.providers[0]: give exactly one of ref: PROVIDER_OR_AGENT or "
        "agent: AGENT"
    )


def test_price_must_be_two_numbers(tmp_path: Path) -> None:
    path = write(
        tmp_path, "chain.yaml", "providers:\n  x: {type: openai, model: m, price: [1, 2, 3]}\n"
    )
    assert str(error_of(path)) == (
        f"{path}:2: providers.x.price: expected [usd_per_1M_input_tokens, "
        "usd_per_1M_output_tokens], two numbers >= 0"
    )


# -- references ---------------------------------------------------------------------


def test_unknown_provider_reference_names_what_exists(tmp_path: Path, hooks: str) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        "providers:\n"
        + fn_provider(hooks)
        + "agents:\n  a:\n    providers: [fn]\n  b:\n    providers:\n      - fn\n      - gpt\n",
    )
    assert str(error_of(path)) == (
        f"{path}:9: agents.b.providers[1]: 'gpt' names no provider or agent; "
        "providers: fn; agents: a, b"
    )


def test_unknown_agent_reference(tmp_path: Path, hooks: str) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        "providers:\n" + fn_provider(hooks) + "agents:\n  a:\n    providers: [{agent: fn}]\n",
    )
    assert (
        str(error_of(path))
        == f"{path}:5: agents.a.providers[0].agent: 'fn' names no agent; agents: a"
    )


def test_cycle_between_agents(tmp_path: Path, hooks: str) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        "providers:\n" + fn_provider(hooks) + "agents:\n"
        "  a:\n    providers: [fn, {agent: b}]\n"
        "  b:\n    providers: [c]\n"
        "  c:\n    providers: [a]\n",
    )
    assert str(error_of(path)) == (
        f"{path}:9: agents.c.providers[0]: cycle between agents: a -> b -> c -> a; "
        "an agent cannot contain itself"
    )


def test_agent_containing_itself(tmp_path: Path) -> None:
    path = write(tmp_path, "chain.yaml", "agents:\n  a:\n    providers: [a]\n")
    assert "agents.a.providers[0]: cycle between agents: a -> a" in str(error_of(path))


def test_agent_and_provider_names_must_differ(tmp_path: Path, hooks: str) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        "providers:\n" + fn_provider(hooks) + "agents:\n  fn:\n    providers: [fn]\n",
    )
    assert str(error_of(path)) == (
        f"{path}:4: agents.fn: the name 'fn' is also a provider's; "
        "give agents and providers distinct names"
    )


def test_hook_import_errors(tmp_path: Path, hooks: str) -> None:
    base = "providers:\n" + fn_provider(hooks) + "agents:\n  a:\n    providers: [fn]\n"
    path = write(tmp_path, "chain.yaml", base + "    on_fallback: no_such_module_xyz:f\n")
    err = str(error_of(path))
    assert err.startswith(
        f"{path}:6: agents.a.on_fallback: cannot import module 'no_such_module_xyz' for "
        "'no_such_module_xyz:f' (No module named 'no_such_module_xyz')"
    )
    path = write(tmp_path, "chain.yaml", base + f"    on_fallback: {hooks}:missing\n")
    assert str(error_of(path)) == (
        f"{path}:6: agents.a.on_fallback: '{hooks}' has no 'missing'; it defines: VALUE, answer"
    )
    path = write(tmp_path, "chain.yaml", base + f"    accept: {hooks}:VALUE\n")
    assert str(error_of(path)) == (
        f"{path}:6: agents.a.accept: '{hooks}:VALUE' is a int, not a callable"
    )


def test_workflow_reference_and_shape_errors(tmp_path: Path, hooks: str) -> None:
    head = (
        "providers:\n"
        + fn_provider(hooks)
        + "agents:\n  a:\n    providers: [fn]\nworkflows:\n  w:\n    phases:\n"
    )
    path = write(
        tmp_path, "chain.yaml", head + "      - name: P\n        steps: [{name: s, agent: zz}]\n"
    )
    assert str(error_of(path)) == (
        f"{path}:10: workflows.w.phases[0].steps[0].agent: 'zz' names no agent or provider; "
        "agents: a; providers: fn"
    )
    path = write(
        tmp_path,
        "chain.yaml",
        head + "      - name: P\n        steps:\n          - {name: s, agent: a}\n"
        "          - {name: s, agent: fn}\n",
    )
    assert str(error_of(path)) == (
        f"{path}:12: workflows.w.phases[0].steps[1].name: step name 's' is already used at "
        "workflows.w.phases[0].steps[0]; step names must be unique"
    )
    path = write(
        tmp_path,
        "chain.yaml",
        head + "      - name: P\n        limit: 2\n        steps: [{name: s, agent: a}]\n",
    )
    assert str(error_of(path)) == (
        f"{path}:10: workflows.w.phases[0].limit: limit applies only with parallel: true"
    )


def test_provider_constructor_errors_are_located(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        "providers:\n  x:\n    type: openai\n    model: m\n    base_url: http://example.com/v1\n"
        "  y: {type: http, url: 'ftp://files.example/x'}\n"
        "  c: {type: codex, api_key_env: 'not a name'}\n",
    )
    assert str(error_of(path)).splitlines() == [
        f"{path}:5: providers.x.base_url: 'http://example.com/v1' is a plain http:// URL to "
        "another machine, which would send credentials in clear text; use an https:// URL, or "
        "set allow_insecure_http: true on this provider if the network is trusted",
        f"{path}:6: providers.y.url: 'ftp://files.example/x' is not an http(s) URL; give e.g. "
        "'https://api.example.com/v1'",
        f"{path}:7: providers.c.api_key_env: 'not a name' must be an environment variable name",
    ]


@pytest.mark.parametrize(
    "entry",
    [
        "base_url: http://127.0.0.1:8080/v1",
        "base_url: http://localhost/v1",
        "base_url: 'http://[::1]:9/v1'",
        "{base_url: http://10.0.0.5/v1, allow_insecure_http: true}",
    ],
)
def test_plain_http_to_this_machine_or_when_allowed_is_accepted(tmp_path: Path, entry: str) -> None:
    if entry.startswith("{"):
        entry = entry.strip("{}").replace(", ", "\n    ")
    path = write(
        tmp_path, "chain.yaml", f"providers:\n  x:\n    type: openai\n    model: m\n    {entry}\n"
    )
    assert list(load_config(path, environ={}).providers) == ["x"]


ENV_URLS = {
    "GATEWAY_URL": "http://gw.corp.example/v1?api_key=TOPSECRET-123",
    "HOOK_URL": "http://bot:hunter2pass@hooks.corp.example/complete",
    "OPENAI_API_KEY": "sk-x",
    "HOOK_TOKEN": "t",
    "KEYVAR": "not-a-name=TOPSECRET-123",
}


def test_environment_values_never_appear_in_constructor_errors(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        """
        providers:
          gw:
            type: openai
            model: gpt-4o-mini
            base_url: "${GATEWAY_URL}"
            api_key: "${OPENAI_API_KEY}"
          hook:
            type: http
            url: "${HOOK_URL}"
            headers: {Authorization: "Bearer ${HOOK_TOKEN}"}
          c:
            type: codex
            api_key_env: "${KEYVAR}"
        """,
    )
    err = str(error_of(path, ENV_URLS))
    insecure = (
        "is a plain http:// URL to another machine, which would send credentials in clear "
        "text; use an https:// URL, or set allow_insecure_http: true on this provider if the "
        "network is trusted"
    )
    assert err.splitlines() == [
        f"{path}:5: providers.gw.base_url: the value of ${{GATEWAY_URL}} {insecure}",
        f"{path}:9: providers.hook.url: the value of ${{HOOK_URL}} {insecure}",
        f"{path}:13: providers.c.api_key_env: the value of ${{KEYVAR}} must be an environment "
        "variable name",
    ]
    for leaked in ("TOPSECRET", "hunter2pass", "corp.example", "bot:"):
        assert leaked not in err


def test_constructor_messages_are_scrubbed_of_environment_values_and_url_parts() -> None:
    from orchestrator.config.scrub import EnvValues, constructor_problem
    from orchestrator.config.source import Source

    src = Source("chain.yaml", {}, lambda path: 7)
    value = "https://bot:hunter2pass@gw.corp.example/v1?api_key=TOPSECRET-123&x=1"
    env = EnvValues(
        {"providers": {"gw": {"base_url": value, "model": "m"}}},
        {("providers", "gw", "base_url"): ("GATEWAY_URL",)},
    )
    # a message in another shape, naming parts of the URL (redacted or not)
    exc = ValueError(
        "cannot reach 'https://bot:***@gw.corp.example/v1?api_key=***&x=1' "
        f"(from {value}); password hunter2pass, key TOPSECRET-123"
    )
    problem = constructor_problem(src, ("providers", "gw"), exc, env)
    assert problem.path == ("providers", "gw")
    for leaked in ("hunter2pass", "TOPSECRET", "corp.example", value):
        assert leaked not in problem.message
    assert "the value of ${GATEWAY_URL}" in problem.message


# -- secrets ------------------------------------------------------------------------

KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz012345"


def test_literal_api_key_is_refused_without_echoing_it(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        f"providers:\n  claude:\n    type: anthropic\n    model: m\n    api_key: {KEY}\n",
    )
    err = str(error_of(path))
    assert err == (
        f"{path}:5: providers.claude.api_key: a literal secret is not allowed in the chain file "
        "(it would be committed and shared); keep it in the environment and write "
        "api_key: ${ANTHROPIC_API_KEY}"
    )
    assert KEY not in err


@pytest.mark.parametrize(
    ("entry", "field", "fix"),
    [
        ("api_key: dummy", "api_key", "api_key: ${OPENAI_API_KEY}"),
        (f'api_key: "${{OPENAI_API_KEY:-{KEY}}}"', "api_key", "api_key: ${OPENAI_API_KEY}"),
        (
            "headers: {Authorization: 'Bearer abc123'}",
            "headers.Authorization",
            'Authorization: "Bearer ${X_TOKEN}"',
        ),
        ("headers: {x-api-key: 'abc123'}", "headers.x-api-key", 'x-api-key: "${X_TOKEN}"'),
        (f"headers: {{X-Custom: '{KEY}'}}", "headers.X-Custom", 'X-Custom: "${X_TOKEN}"'),
        (
            "headers: {X-Upstream: 'Bearer abcdefgh'}",
            "headers.X-Upstream",
            'X-Upstream: "${X_TOKEN}"',
        ),
        (
            "base_url: https://h/v1?key=AIzaSyA0123456789abcdef",
            "base_url",
            'base_url: "${X_BASE_URL}"',
        ),
    ],
)
def test_literal_secrets_in_other_fields_are_refused(
    tmp_path: Path, entry: str, field: str, fix: str
) -> None:
    path = write(
        tmp_path, "chain.yaml", f"providers:\n  x:\n    type: openai\n    model: m\n    {entry}\n"
    )
    err = str(error_of(path))
    assert err.startswith(f"{path}:5: providers.x.{field}: a literal secret is not allowed")
    assert err.endswith(f"write {fix}")
    for secret in (KEY, "abc123", "abcdefgh", "AIzaSyA0123456789abcdef"):
        assert secret not in err


@pytest.mark.parametrize(
    ("provider", "field", "fix", "secret"),
    [
        (
            'type: openai, model: m, api_key: "${GROQ_API_KEY:-gsk_live9fJx2Lq7Vt8Zr3Wp6Yn1}"',
            "api_key",
            "api_key: ${GROQ_API_KEY}",
            "gsk_live9fJx2Lq7Vt8Zr3Wp6Yn1",
        ),
        (
            'type: openai, model: m, api_key: "${OPENAI_API_KEY:-placeholder}"',
            "api_key",
            "api_key: ${OPENAI_API_KEY}",
            "placeholder",
        ),
        (
            'type: http, url: "https://hooks.example.com/complete?token=whk_5b8e1c2d9a7f"',
            "url",
            'url: "${X_URL}"',
            "whk_5b8e1c2d9a7f",
        ),
        (
            'type: http, url: "https://h.example/c?a=1&Access-Token=q9w8e7r6"',
            "url",
            'url: "${X_URL}"',
            "q9w8e7r6",
        ),
        (
            'type: http, url: "${HOOK_URL:-https://h.example/c?sig=q9w8e7r6}"',
            "url",
            'url: "${HOOK_URL}"',
            "q9w8e7r6",
        ),
        (
            'type: openai, model: m, base_url: "https://team:pw5b8e1c2d9a7f@gateway.example/v1"',
            "base_url",
            'base_url: "${X_BASE_URL}"',
            "pw5b8e1c2d9a7f",
        ),
        (
            'type: claude_code, env: {ANTHROPIC_BASE_URL: "https://u:p4ssw0rd@gw.example"}',
            "env.ANTHROPIC_BASE_URL",
            'ANTHROPIC_BASE_URL: "${ANTHROPIC_BASE_URL}"',
            "p4ssw0rd",
        ),
        (
            "type: codex, env: {GROQ: gsk_live9fJx2Lq7Vt8Zr3Wp6Yn1}",
            "env.GROQ",
            'GROQ: "${GROQ}"',
            "gsk_live9fJx2Lq7Vt8Zr3Wp6Yn1",
        ),
        (
            "type: gemini_cli, env: {HDR: 'Authorization: Bearer abcd1234efgh'}",
            "env.HDR",
            'HDR: "${HDR}"',
            "abcd1234efgh",
        ),
        (
            "type: anthropic, model: m, headers: {x-custom-auth: abc123def456ghi789}",
            "headers.x-custom-auth",
            'x-custom-auth: "${X_TOKEN}"',
            "abc123def456ghi789",
        ),
        (
            'type: anthropic, model: m, headers: {X-Api-Key: "${K:-abcdef}"}',
            "headers.X-Api-Key",
            'X-Api-Key: "${K}"',
            "abcdef",
        ),
    ],
)
def test_literal_credentials_in_urls_defaults_and_env_are_refused(
    tmp_path: Path, provider: str, field: str, fix: str, secret: str
) -> None:
    path = write(tmp_path, "chain.yaml", f"providers:\n  x: {{{provider}}}\n")
    err = str(error_of(path))
    assert err.startswith(f"{path}:2: providers.x.{field}: a literal secret is not allowed")
    assert err.endswith(f"write {fix}")
    assert secret not in err


@pytest.mark.parametrize(
    "key",
    [
        "sk-ant-api03-abcdefgh",
        "sk-proj-abcdefgh12",
        "gsk_abcdefghijkl",
        "xai-abcdefghijkl",
        "AIzaSyA0123456789abc",
        "ghp_abcdefghijkl",
        "github_pat_abcdefghijkl",
        "hf_abcdefghijkl",
    ],
)
def test_key_shaped_values_are_refused_anywhere_in_a_provider(tmp_path: Path, key: str) -> None:
    path = write(
        tmp_path, "chain.yaml", f"providers:\n  x: {{type: codex, extra_args: [--key, '{key}']}}\n"
    )
    err = str(error_of(path))
    assert "providers.x.extra_args[1]: a literal secret is not allowed" in err
    assert key not in err


def test_urls_and_text_without_literal_credentials_are_accepted(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        """
        providers:
          hook:
            type: http
            url: "https://${GW_USER}:${GW_PASSWORD}@h.example/c?token=${HOOK_TOKEN}&mode=fast&keyword=x"
          gw:
            type: openai
            model: m
            base_url: "https://gw.example/v1?api-version=2024&sig=${GW_PASSWORD}"
            api_key: "${OPENAI_API_KEY:-}"
          c:
            type: claude_code
            system_prompt: "Bearer tokens and Token budgets are fine to talk about"
            env: {ANTHROPIC_BASE_URL: "https://user@gw.example", ANTHROPIC_AUTH_TOKEN: "${T}"}
          o:
            type: anthropic
            model: m
            headers: {anthropic-beta: tools-2024, x-auth-mode: strict}
        """,
    )
    env = {"HOOK_TOKEN": "t", "GW_USER": "u", "GW_PASSWORD": "p", "T": "t"}
    assert sorted(load_config(path, environ=env).providers) == ["c", "gw", "hook", "o"]


def test_user_info_in_a_vendor_base_url_is_refused(tmp_path: Path) -> None:
    # User info moved above to the http provider (which sends it as Basic auth): a
    # vendor authenticates with its key, and refuses user info (issue 8, section 7).
    path = write(
        tmp_path,
        "chain.yaml",
        """
        providers:
          gw:
            type: openai
            model: m
            base_url: "https://${GW_USER}:${GW_PASSWORD}@gw.example/v1?api-version=2024"
        """,
    )
    err = str(error_of(path, environ={"GW_USER": "u", "GW_PASSWORD": "p-s3cr3t"}))
    assert "providers.gw.base_url" in err and "api_key=" in err
    assert "p-s3cr3t" not in err


def test_cli_env_with_a_literal_key_is_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        f"providers:\n  c:\n    type: claude_code\n    env: {{ANTHROPIC_API_KEY: {KEY}}}\n",
    )
    err = str(error_of(path))
    assert "providers.c.env.ANTHROPIC_API_KEY: a literal secret is not allowed" in err
    assert err.endswith('write ANTHROPIC_API_KEY: "${ANTHROPIC_API_KEY}"')


def test_references_are_accepted(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        """
        providers:
          x:
            type: http
            url: https://llm.example/complete
            headers: {Authorization: "Bearer ${TOKEN}", X-Team: search}
        """,
    )
    config = load_config(path, environ={"TOKEN": KEY})
    assert KEY not in repr(config.providers["x"])


def test_unset_variable_names_field_and_variable(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        "providers:\n  claude:\n    type: anthropic\n    model: m\n"
        "    api_key: ${ANTHROPIC_API_KEY}\n",
    )
    assert str(error_of(path)) == (
        f"{path}:5: providers.claude.api_key: environment variable ANTHROPIC_API_KEY is not set; "
        "export ANTHROPIC_API_KEY=... or give a default: ${ANTHROPIC_API_KEY:-value}"
    )


def test_bad_reference_syntax(tmp_path: Path) -> None:
    path = write(tmp_path, "chain.yaml", "providers:\n  x: {type: openai, model: '${1BAD}'}\n")
    assert "providers.x.model: ${1BAD} is not a variable reference" in str(error_of(path))
    path = write(tmp_path, "chain.yaml", "providers:\n  x: {type: openai, model: '${OPEN'}\n")
    assert "providers.x.model: unterminated '${'" in str(error_of(path))


def test_values_from_the_environment_are_not_printed(tmp_path: Path, hooks: str) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        "providers:\n" + fn_provider(hooks) + "agents:\n  a:\n    providers: [fn]\n"
        "    timeout: ${SECRET_TIMEOUT}\n",
    )
    err = str(error_of(path, {"SECRET_TIMEOUT": "hunter2-value"}))
    assert err == f"{path}:6: agents.a.timeout: the value of ${{SECRET_TIMEOUT}} is not a number"
    assert "hunter2" not in err


def test_every_problem_is_reported_in_line_order(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        "providers:\n  x: {type: openai, model: m, timeout: 0}\n"
        "  y: {type: gemini, model: m, retry_strategy: sometimes}\n",
    )
    err = error_of(path)
    assert [p.line for p in err.problems] == [2, 3]
    assert (
        str(err).splitlines()[0]
        == f"{path}:2: providers.x.timeout: 0 is not allowed; use a number > 0"
    )


def test_max_response_bytes_is_a_strict_positive_whole_number(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        "providers:\n"
        "  o: {type: openai, model: m, max_response_bytes: 0}\n"
        '  a: {type: anthropic, model: m, max_response_bytes: "1000"}\n'
        "  g: {type: gemini, model: m, max_response_bytes: 1.5}\n"
        "  h: {type: http, url: 'https://example.invalid/x', max_response_bytes: true}\n",
    )
    assert str(error_of(path)).splitlines() == [
        f"{path}:2: providers.o.max_response_bytes: 0 is not allowed; use a number > 0",
        f"{path}:3: providers.a.max_response_bytes: '1000' is not a whole number (it is a "
        "string; write 1000 without quotes)",
        f"{path}:4: providers.g.max_response_bytes: 1.5 is not a whole number",
        f"{path}:5: providers.h.max_response_bytes: true is not a whole number",
    ]


@pytest.mark.parametrize(
    "url",
    [
        "ftp://files.example/x",
        "https://gw.example:99999/v1",
        "https://bot@gw.example/v1",
        "http://gw.example/v1",
    ],
)
def test_a_file_endpoint_is_checked_by_the_constructors_rule(tmp_path: Path, url: str) -> None:
    from orchestrator.secrets import check_endpoint, endpoint_problem
    from providers.http.spec import FILE_OPT_IN

    path = write(
        tmp_path, "chain.yaml", f"providers:\n  x: {{type: openai, model: m, base_url: '{url}'}}\n"
    )
    rule = {"allow_insecure_http": False, "allow_user_info": False}
    problem = endpoint_problem(url, **rule, opt_in=FILE_OPT_IN)
    assert problem is not None
    assert str(error_of(path)) == f"{path}:2: providers.x.base_url: {url!r} {problem}"
    with pytest.raises(ValueError) as info:
        check_endpoint(url, field="OpenAIChat.base_url", **rule)
    assert str(info.value).endswith(str(endpoint_problem(url, **rule)))
