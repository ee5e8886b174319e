"""Amazon Bedrock: ``BedrockConverse`` (``client``), SigV4 signing and credentials
through botocore (``signing``), AWS event-stream frames (``eventstream``), the
Converse wire (``converse``), Bedrock's errors (``errors``) and the chain file's
``type: bedrock`` (``spec``). botocore is imported only when a provider is built."""

from __future__ import annotations

from providers.bedrock.client import BedrockConverse

__all__ = ["BedrockConverse"]
