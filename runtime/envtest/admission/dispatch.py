"""Running the configured webhooks for one request, as the real server's MutatingAdmissionWebhook
and ValidatingAdmissionWebhook plugins run them.

Mutating webhooks run one after another, configurations in name order and webhooks in their
order, each seeing the previous one's result; a JSONPatch they answer is applied and the result
decoded again. If one changed the object, the earlier webhooks with reinvocationPolicy IfNeeded
are called once more. Validating webhooks then run in parallel on the final object. A webhook
that cannot be called fails the request unless its failurePolicy is Ignore; a denial always
does.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import uuid
from collections.abc import Callable
from typing import Any

from runtime.envtest import conversion, patch
from runtime.envtest.admission import matching, review
from runtime.envtest.admission.attributes import DELETE, Attributes
from runtime.envtest.admission.errors import (
    CallError,
    denied,
    dry_run_unsupported,
    internal_error,
    modifies_deleted,
)
from runtime.envtest.admission.services import ServiceResolver
from runtime.envtest.admission.transport import Transport, TransportError
from runtime.envtest.admission.webhook import Webhook, webhooks
from runtime.envtest.registry import ADMISSION_GROUP, Registry, ResourceType
from runtime.envtest.status import StatusError
from runtime.envtest.store import Obj, Store

Decode = Callable[[Obj], Obj]
_log = logging.getLogger(__name__)


class _Reinvocation:
    """Which webhooks must run again: those with IfNeeded that ran before a later change."""

    def __init__(self) -> None:
        self.invoked: set[str] = set()
        self.again: set[str] = set()
        self.changed = False

    def record(self, hook: Webhook, changed: bool) -> None:
        if changed:
            self.again |= self.invoked
            self.invoked = set()
            self.changed = True
        if hook.reinvoke_if_needed:
            self.invoked.add(hook.uid)


class Admission:
    """The webhooks configured in the store, called for the writes that match them."""

    def __init__(self, store: Store, registry: Registry, *, services: ServiceResolver) -> None:
        self._store = store
        self._registry = registry
        self._transport = Transport(services)
        # Parsed configurations, by name and resourceVersion.
        self._parsed: dict[tuple[str, str, str], list[Webhook]] = {}

    async def close(self) -> None:
        await self._transport.close()

    def _hooks(self, plural: str, *, mutating: bool) -> list[Webhook]:
        hooks: list[Webhook] = []
        seen = set()
        for entry in self._store.entries(f"{ADMISSION_GROUP}/{plural}", None):
            key = (plural, entry.name, entry.obj["metadata"]["resourceVersion"])
            seen.add(key)
            parsed = self._parsed.get(key)
            if parsed is None:
                parsed = self._parsed[key] = webhooks(entry.obj, mutating=mutating)
            hooks.extend(parsed)
        for key in [k for k in self._parsed if k[0] == plural and k not in seen]:
            del self._parsed[key]
        return hooks  # entries come sorted by name, as the real server orders them

    def _namespace_labels(self, name: str) -> dict[str, str] | None:
        entry = self._store.get("/namespaces", "", name)
        if entry is None:
            return None
        return dict(entry.obj["metadata"].get("labels") or {})

    def _equivalents(self, rt: ResourceType) -> Callable[[], list[ResourceType]]:
        def others() -> list[ResourceType]:
            # Versions of one resource share storage here, which is what makes them equivalent.
            return sorted((t for t in self._registry if t.store_key == rt.store_key
                           and t.plural == rt.plural), key=lambda t: t.version)
        return others

    def _invocation(self, hook: Webhook, attrs: Attributes, obj: Any,
                    old: Any) -> ResourceType | None:
        return matching.invocation(hook, attrs, obj, old,
                                   namespace_labels=self._namespace_labels,
                                   equivalents=self._equivalents(attrs.rt))

    async def _call(self, hook: Webhook, attrs: Attributes, rt: ResourceType, obj: Any,
                    old: Any) -> review.Verdict:
        """Ask one webhook; raises CallError when it cannot be asked, StatusError for what
        fails the request whatever the failurePolicy."""
        if attrs.dry_run and hook.side_effects not in ("None", "NoneOnDryRun"):
            raise dry_run_unsupported(hook.name)
        if "v1" not in hook.review_versions:
            raise CallError(hook.name, "could not create admission objects: webhook does not "
                            "accept known AdmissionReview versions (v1)")
        # Review uids never draw from the server's seeded rng: that would shift object uids.
        uid = str(uuid.uuid4())
        body = review.request(uid, attrs, rt, obj, old)
        try:
            raw = await self._transport.post(hook, body)
            verdict = review.verdict(raw, uid, mutating=hook.mutating)
        except (TransportError, review.InvalidResponse) as exc:
            raise CallError(hook.name, str(exc)) from None
        for text in verdict.warnings:
            attrs.warnings.add(text)
        if not verdict.allowed:
            raise denied(hook.name, verdict.status)
        return verdict

    def _fail_or_ignore(self, hook: Webhook, err: CallError) -> None:
        if hook.failure_policy != "Ignore":
            raise internal_error(str(err))
        _log.warning("envtest: failed calling webhook, failing open %s: %s", hook.name, err)

    # -- mutating ----------------------------------------------------------------------------

    async def mutate(self, attrs: Attributes, obj: Obj | None, old: Obj | None, *,
                     decode: Decode) -> Obj | None:
        """`obj` as the mutating webhooks leave it (the same object when none applies)."""
        if matching.exempt(attrs):
            return obj
        hooks = self._hooks("mutatingwebhookconfigurations", mutating=True)
        if not hooks:
            return obj
        state = _Reinvocation()
        current = obj
        for again in (False, True):
            if again and not state.changed:
                break
            for hook in hooks:
                rt = self._invocation(hook, attrs, current, old)
                if rt is None or (again and hook.uid not in state.again):
                    continue
                changed = False
                try:
                    verdict = await self._call(hook, attrs, rt, current, old)
                except CallError as err:
                    state.record(hook, False)
                    self._fail_or_ignore(hook, err)
                    continue
                if verdict.patch:
                    patched = self._patched(hook, attrs, rt, current, verdict.patch, decode)
                    changed = patched != current
                    current = patched
                state.record(hook, changed)
        return current

    def _patched(self, hook: Webhook, attrs: Attributes, rt: ResourceType, obj: Obj | None,
                 ops: list[Any], decode: Decode) -> Obj:
        if obj is None or attrs.operation == DELETE:
            raise modifies_deleted(hook.name)
        # Patched at the webhook's version, and converted back (conversion.py).
        doc = copy.deepcopy(conversion.served(obj, rt))
        try:
            result = patch.json_patch(doc, ops)
            if isinstance(result, dict):
                result = conversion.served(result, attrs.rt)
            return decode(result)
        except StatusError as err:
            # The real server cannot apply or decode the patch either: a 500, whatever the
            # failurePolicy.
            raise internal_error(str(err)) from None

    # -- validating --------------------------------------------------------------------------

    async def validate(self, attrs: Attributes, obj: Obj | None, old: Obj | None) -> None:
        """Raises the first refusal (in webhook order) of the validating webhooks."""
        if matching.exempt(attrs):
            return
        hooks = self._hooks("validatingwebhookconfigurations", mutating=False)
        calls = [(hook, rt) for hook in hooks
                 if (rt := self._invocation(hook, attrs, obj, old)) is not None]
        if not calls:
            return
        outcomes = await asyncio.gather(*(self._call(hook, attrs, rt, obj, old)
                                          for hook, rt in calls), return_exceptions=True)
        for (hook, _), outcome in zip(calls, outcomes, strict=True):
            if isinstance(outcome, CallError):
                self._fail_or_ignore(hook, outcome)
            elif isinstance(outcome, BaseException):
                raise outcome
