"""The simulated Bedrock route's SigV4 check: a request is re-signed by botocore with the
credentials the server was given and compared in constant time, so a signing bug in a
client cannot hide behind a lenient double. A missing, unknown, stale or wrong
signature gets AWS's own 403 (``UnrecognizedClientException``,
``InvalidSignatureException``), as Bedrock answers it.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime

from providers.simulator.http11 import Exchange

__all__ = ["check_signature", "refuse_unsigned"]

_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/,\s]{1,128})/(?P<date>\d{8})"
    r"/(?P<region>[a-z0-9-]{1,40})/(?P<service>[a-z0-9-]{1,40})/aws4_request,\s*SignedHeaders=(?P<signed>[a-z0-9;-]{1,2000}),"
    r"\s*Signature=(?P<signature>[0-9a-f]{64})"
)
_SKEW = 15 * 60  # seconds a signature's date may be off, as AWS allows
_MISMATCH = (
    "The request signature we calculated does not match the signature you provided. "
    "Check your AWS Secret Access Key and signing method. Consult the service "
    "documentation for details."
)

Refusal = tuple[int, str, str]  # status, exception type, message


def _refusal(kind: str, message: str) -> Refusal:
    return 403, kind, message


def check_signature(
    target: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    access_key: str,
    secret_key: str,
) -> Refusal | None:
    """None when ``headers`` carry a valid SigV4 signature of ``POST target`` with
    ``body`` by ``access_key``/``secret_key`` for the service ``bedrock``; else AWS's refusal."""
    match = _AUTH.fullmatch(headers.get("authorization", "").strip())
    if match is None:
        return _refusal("UnrecognizedClientException", "Missing or malformed Authorization")
    if not hmac.compare_digest(match["key"].encode(), access_key.encode()):
        return _refusal(
            "UnrecognizedClientException", "The security token included in the request is invalid."
        )
    stamp = headers.get("x-amz-date", "")
    try:
        when = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        return _refusal("InvalidSignatureException", "Missing or invalid X-Amz-Date")
    if abs((datetime.now(UTC) - when).total_seconds()) > _SKEW or stamp[:8] != match["date"]:
        return _refusal("InvalidSignatureException", "Signature expired or its date is wrong")
    if match["service"] != "bedrock":
        return _refusal(
            "InvalidSignatureException",
            "Credential should be scoped to correct service: 'bedrock'.",
        )
    names = match["signed"].split(";")
    if not {"host", "x-amz-date"} <= set(names) or any(n not in headers for n in names):
        return _refusal("InvalidSignatureException", "A signed header is missing")
    expected = _signature(target, {n: headers[n] for n in names}, body, match, secret_key)
    if not hmac.compare_digest(expected.encode(), match["signature"].encode()):
        return _refusal("InvalidSignatureException", _MISMATCH)
    return None


def _signature(
    target: str, signed: dict[str, str], body: bytes, match: re.Match[str], secret_key: str
) -> str:
    """The signature botocore computes for the request as received."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    credentials = Credentials(match["key"], secret_key, signed.get("x-amz-security-token"))
    auth = SigV4Auth(credentials, match["service"], match["region"])
    request = AWSRequest("POST", f"http://{signed['host']}{target}", signed, body)
    request.context["timestamp"] = signed["x-amz-date"]
    canonical = auth.canonical_request(request)
    return str(auth.signature(auth.string_to_sign(request, canonical), request))


def refuse_unsigned(ex: Exchange, *, access_key: str, secret_key: str) -> bool:
    """Answer AWS's 403 to a request without a valid signature (True when it did so)."""
    try:
        refused = check_signature(
            ex.target, ex.headers, ex.body, access_key=access_key, secret_key=secret_key
        )
    except ImportError:
        need = "the bedrock route checks signatures with botocore"
        refused = (501, "NotImplemented", f"{need}: pip install 'failover-orchestrator[aws]'")
    if refused is None:
        return False
    status, kind, message = refused
    headers = {"Content-Type": "application/json", "x-amzn-ErrorType": kind}
    ex.send(status, headers, json.dumps({"message": message}).encode())
    return True
