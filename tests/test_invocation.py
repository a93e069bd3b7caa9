"""The invocation context: what a chain run or a tool execution is doing."""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import threading

import attrs
import pytest

from langhooks import Invocation, current_invocation, invocation


class TestInvocation:
    def test_defaults(self) -> None:
        """An invocation gets a unique hex id, a UTC start time and no parent."""
        first, second = Invocation(name="run"), Invocation(name="run")
        assert first.id != second.id
        assert len(first.id) == 32
        int(first.id, 16)
        assert first.parent_id is None
        assert first.custom_context == {}
        assert first.started_at.tzinfo is datetime.UTC

    def test_frozen(self) -> None:
        """An invocation is an immutable value."""
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            Invocation(name="run").name = "other"  # type: ignore[misc]

    def test_validation(self) -> None:
        """A non-str name or non-mapping custom context fails naming the field."""
        with pytest.raises(TypeError, match="name"):
            Invocation(name=1)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="custom_context must be a mapping"):
            Invocation(name="run", custom_context=1)  # type: ignore[arg-type]


class TestInvocationContext:
    def test_none_by_default(self) -> None:
        """Outside any invocation there is no current one."""
        assert current_invocation() is None

    def test_with_sets_and_restores(self) -> None:
        """with invocation(...) makes it current and restores None on exit."""
        with invocation("run", custom_context={"user": "ada"}) as run:
            assert current_invocation() is run
            assert (run.name, run.custom_context) == ("run", {"user": "ada"})
        assert current_invocation() is None

    def test_custom_context_copied(self) -> None:
        """The custom context is a read-only copy."""
        given = {"user": "ada"}
        with invocation("run", custom_context=given) as run:
            given["user"] = "bob"
            assert run.custom_context == {"user": "ada"}

    def test_nesting_records_parent(self) -> None:
        """A nested invocation records the enclosing one as its parent."""
        with invocation("run") as run:
            with invocation("tool") as tool:
                assert tool.parent_id == run.id
                with invocation("inner") as inner:
                    assert inner.parent_id == tool.id
                assert current_invocation() is tool
            assert current_invocation() is run
        assert current_invocation() is None

    def test_restored_on_exception(self) -> None:
        """The previous invocation is current again when the body raises."""
        with invocation("run") as run:
            with pytest.raises(RuntimeError), invocation("tool"):
                raise RuntimeError("tool failed")
            assert current_invocation() is run
        assert current_invocation() is None

    def test_name_must_be_str(self) -> None:
        """invocation() rejects a non-str name before changing anything."""
        with pytest.raises(TypeError, match="name must be a str"), invocation(1):  # type: ignore[arg-type]
            pass  # pragma: no cover  # never entered
        assert current_invocation() is None


class TestThreads:
    def test_thread_with_copied_context_sees_it(self) -> None:
        """A thread started with copy_context().run sees the current invocation."""
        seen: list[Invocation | None] = []
        with invocation("run") as run:
            context = contextvars.copy_context()
            thread = threading.Thread(
                target=context.run, args=(lambda: seen.append(current_invocation()),)
            )
            thread.start()
            thread.join()
        assert seen == [run]

    def test_plain_thread_does_not(self) -> None:
        """A thread started without copying the context sees no invocation."""
        seen: list[Invocation | None] = []
        with invocation("run"):
            thread = threading.Thread(target=lambda: seen.append(current_invocation()))
            thread.start()
            thread.join()
        assert seen == [None]

    def test_thread_changes_do_not_leak_back(self) -> None:
        """An invocation started in a thread is not current in the caller."""
        ready = threading.Event()
        release = threading.Event()

        def work() -> None:
            with invocation("worker"):
                ready.set()
                release.wait()

        thread = threading.Thread(target=work)
        thread.start()
        ready.wait()
        assert current_invocation() is None
        release.set()
        thread.join()


class TestTasks:
    async def test_task_inherits_current(self) -> None:
        """A task created inside an invocation sees it."""

        async def child() -> Invocation | None:
            return current_invocation()

        with invocation("run") as run:
            assert await asyncio.create_task(child()) is run

    async def test_concurrent_tasks_never_cross(self) -> None:
        """Many concurrent tasks each keep their own invocation across awaits."""

        async def work(i: int) -> tuple[str, list[str]]:
            seen: list[str] = []
            with invocation(f"task-{i}") as mine:
                for _ in range(5):
                    await asyncio.sleep(0)
                    current = current_invocation()
                    assert current is not None
                    seen.append(current.name)
                    with invocation(f"tool-{i}") as tool:
                        await asyncio.sleep(0)
                        assert current_invocation() is tool
                        assert tool.parent_id == mine.id
                    assert current_invocation() is mine
            return f"task-{i}", seen

        results = await asyncio.gather(*(work(i) for i in range(50)))
        for name, seen in results:
            assert seen == [name] * 5
        assert current_invocation() is None

    async def test_task_changes_do_not_leak_back(self) -> None:
        """An invocation a task enters is not current in the task that awaits it."""

        async def child() -> None:
            with invocation("child"):
                await asyncio.sleep(0)

        with invocation("parent") as parent:
            await asyncio.create_task(child())
            assert current_invocation() is parent
