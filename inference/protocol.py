"""Request bodies of the HTTP API (pydantic), and the OpenAI-style error type.

Only the request side is modelled: FastAPI validates it and every validation failure
becomes a 400 with the offending field path in `param`. Responses are plain dicts built in
`inference.server`, shaped exactly like OpenAI's chat completion objects (plus the
extension fields documented there), so the official `openai` client parses them.

Numbers and booleans are strict: `"max_tokens": "16"` is a wrong type, not a 16.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, field_validator

# Roles the chat template knows. OpenAI's newer "developer" role is a system prompt.
Role = Literal["system", "developer", "user", "assistant"]
Number = StrictFloat | StrictInt


class APIError(Exception):
    """An error the client caused or must handle, rendered as OpenAI's error body:
    {"error": {"message", "type", "param", "code"}} with `status` as the HTTP status."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


class TextPart(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["text"]
    text: StrictStr


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")  # name, tool_call_id, ... are accepted and unused
    role: Role
    content: StrictStr | list[TextPart]

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content)

    def as_template_message(self) -> dict[str, str]:
        return {"role": "system" if self.role == "developer" else self.role, "content": self.text()}


class StreamOptions(BaseModel):
    include_usage: StrictBool = False


class ChatCompletionRequest(BaseModel):
    """POST /v1/chat/completions. Unknown fields are ignored, as OpenAI-compatible servers
    do; features this engine lacks (penalties, tools) are rejected when actually used."""

    model_config = ConfigDict(extra="ignore")

    model: StrictStr
    messages: list[ChatMessage] = Field(min_length=1)
    n: StrictInt = Field(1, ge=1)
    # Sample i of the n uses seed + i, so choice i of two requests with the same seed and
    # different kernel settings forms a pair.
    seed: StrictInt | None = None
    temperature: Number = Field(1.0, ge=0.0, le=2.0)
    top_p: Number = Field(1.0, gt=0.0, le=1.0)
    top_k: StrictInt = Field(0, ge=-1)  # 0 or -1: disabled (vLLM uses -1)
    min_p: Number = Field(0.0, ge=0.0, le=1.0)
    max_tokens: StrictInt | None = Field(None, ge=1)
    max_completion_tokens: StrictInt | None = Field(None, ge=1)
    stop: StrictStr | list[StrictStr] | None = None
    logprobs: StrictBool = False
    top_logprobs: StrictInt | None = Field(None, ge=0, le=20)
    stream: StrictBool = False
    stream_options: StreamOptions | None = None
    kernel: dict[str, Any] | None = None  # kernel settings (docs/architecture.md); validated by KernelSettings
    # vLLM's extension: each choice also gets `token_ids`, the completion's tokens as sampled
    # (a final EOS included); streamed, each chunk's choice carries its own.
    return_token_ids: StrictBool = False
    presence_penalty: Number = 0.0
    frequency_penalty: Number = 0.0
    tools: list[Any] | None = None

    @field_validator("stop")
    @classmethod
    def _stop_list(cls, value: str | list[str] | None) -> list[str]:
        stops = [value] if isinstance(value, str) else list(value or [])
        if len(stops) > 16:
            raise ValueError("at most 16 stop strings")
        if any(s == "" for s in stops):
            raise ValueError("stop strings must not be empty")
        return stops


class DivergenceRequest(BaseModel):
    """POST /v1/divergence: teacher-forced comparison of two kernel settings on the same
    tokens. Give the context either as chat `messages` (rendered with the chat template
    and the assistant generation prompt, so `continuation` is the assistant's answer) or
    as a raw `prompt` string (tokenized as is). Give the tokens to score either as text
    (`continuation`, tokenized without BOS) or as `continuation_ids` (exactly the tokens a
    sample decoded, e.g. a chat completion's `token_ids`: re-tokenizing its text may differ);
    exactly one of the two."""

    model_config = ConfigDict(extra="forbid")

    model: StrictStr | None = None
    messages: list[ChatMessage] | None = Field(None, min_length=1)
    prompt: StrictStr | None = None
    continuation: StrictStr | None = Field(None, min_length=1)
    continuation_ids: list[StrictInt] | None = Field(None, min_length=1)  # each in [0, vocabulary size)
    reference: dict[str, Any] | None = None  # default: stock (dense) settings
    candidate: dict[str, Any]
    kl_threshold: Number = Field(0.1, ge=0.0)
    top_k: StrictInt = Field(5, ge=0, le=20)
