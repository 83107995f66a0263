"""Per-deploy state shared by the synthesizers: calls, tracking tags, resolved `$ref`s."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from controller.deploy.calls import Calls
from controller.deploy.errors import DeployError
from controller.deploy.tags import Tracking
from controller.model import Action, AuthenticateOidcAction, Ref, Stack, digest
from controller.model.base import MAX_TAGS


@dataclass
class DeployRun:
    stack: Stack
    calls: Calls
    tracking: Tracking
    vpc_id: str
    default_tags: dict[str, str] = field(default_factory=dict)
    # (resource type, resource id, status field) → value, filled as resources converge.
    status: dict[tuple[str, str, str], str] = field(default_factory=dict)
    # Listener/rule ARN → digest of the OIDC client secrets last written there. AWS never
    # returns a client secret, so a rotation is only visible against this memory.
    applied_secrets: dict[str, str] = field(default_factory=dict)

    def secret_changed(self, arn: str, actions: Sequence[Action]) -> bool:
        """True if this process wrote other secrets to `arn` before. Unknown (first deploy in
        this process) counts as unchanged: the secret is not rewritten after each restart."""
        known = self.applied_secrets.get(arn)
        return known is not None and known != secrets_digest(actions)

    def record_secrets(self, arn: str, actions: Sequence[Action]) -> None:
        self.applied_secrets[arn] = secrets_digest(actions)

    def resolve(self, ref: Ref) -> str:
        try:
            return self.status[ref.target]
        except KeyError:
            raise DeployError(f"{ref.ref} is not known yet (dependency not deployed)") from None

    def set_status(self, resource_type: str, resource_id: str, field_name: str,
                   value: str) -> None:
        self.status[(resource_type, resource_id, field_name)] = value

    def desired_tags(self, resource_id: str, model_tags: dict[str, str]) -> dict[str, str]:
        tags = self.tracking.tags_for(resource_id, {**self.default_tags, **model_tags})
        if len(tags) > MAX_TAGS:
            raise DeployError(f"{resource_id}: {len(tags)} tags with the default and tracking "
                              f"tags; AWS allows {MAX_TAGS}")
        return tags


def secrets_digest(actions: Sequence[Action]) -> str:
    material = [f"{a.client_id}\0{a.client_secret}" for a in actions
                if isinstance(a, AuthenticateOidcAction)]
    return digest("\n".join(material).encode())
