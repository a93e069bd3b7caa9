"""What ``import langhooks`` loads: the core, and the asyncio machinery on use."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import langhooks

HEAVY = ("asyncio", "ssl", "socket", "subprocess", "concurrent.futures")
# Each lazily loaded public name, and its implementation module.
LAZY = {
    "AsyncCompositeChainHandler": "_wrap._compose",
    "AsyncCompositeStreamingHandler": "_wrap._compose",
    "ChainView": "_core._tools",
    "CoalescingDeltas": "_wrap._coalesce",
    "CompositeChainHandler": "_wrap._compose",
    "CompositeStreamingHandler": "_wrap._compose",
    "HandlerWithoutInvocation": "_wrap._wrappers",
    "StreamEvent": "_wrap._iterate",
    "Synchronized": "_wrap._wrappers",
    "Tool": "_core._tools",
    "ToolContext": "_core._tools",
    "achain_callbacks": "_core._functions",
    "aiterate_stream": "_wrap._iterate",
    "astreaming_callbacks": "_core._functions",
    "chain_callbacks": "_core._functions",
    "filtered": "_wrap._wrappers",
    "in_background": "_wrap._background",
    "isolate": "_wrap._wrappers",
    "iterate_stream": "_wrap._iterate",
    "streaming_callbacks": "_core._functions",
}


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    # Without pytest-cov's variables: coverage in the child would load modules of
    # its own.
    env = {k: v for k, v in os.environ.items() if not k.startswith("COV_CORE_")}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


class TestImportCost:
    def test_import_loads_no_heavy_module(self) -> None:
        """import langhooks loads none of asyncio, ssl, socket, subprocess, ..."""
        loaded = loaded_after("import langhooks")
        assert not loaded & set(HEAVY)
        assert "langhooks.models" not in loaded

    def test_plain_sync_handler_loads_no_heavy_module(self) -> None:
        """Defining and composing a sync handler loads none of the heavy modules."""
        loaded = loaded_after(
            "import langhooks as lh\n"
            "class H(lh.StreamingChatResponseHandler):\n"
            "    def on_partial_response(self, partial, context): pass\n"
            "lh.CompositeStreamingHandler([lh.Synchronized(H())])"
        )
        assert not loaded & set(HEAVY)

    def test_import_loads_only_interfaces_and_values(self) -> None:
        """import langhooks leaves the modules of its lazily loaded names unloaded."""
        loaded = loaded_after("import langhooks")
        assert not loaded & {f"langhooks.{module}" for module in LAZY.values()}

    def test_lazy_name_loads_its_module(self) -> None:
        """Using a lazily loaded name imports its module then."""
        loaded = loaded_after("from langhooks import in_background")
        assert "langhooks._wrap._background" in loaded
        assert "asyncio" in loaded


class TestLazyNames:
    @pytest.mark.parametrize("name", sorted(LAZY))
    def test_lazy_name_resolves(self, name: str) -> None:
        """A lazily loaded public name is the object of its implementation module."""
        implementation = __import__(f"langhooks.{LAZY[name]}", fromlist=[name])
        assert getattr(langhooks, name) is getattr(implementation, name)

    def test_dir_lists_lazy_names(self) -> None:
        """dir(langhooks) lists every public name, lazily loaded ones included."""
        assert set(langhooks.__all__) <= set(dir(langhooks))

    def test_unknown_name(self) -> None:
        """An unknown attribute raises AttributeError naming it."""
        with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
            _ = langhooks.nonexistent  # type: ignore[attr-defined]
