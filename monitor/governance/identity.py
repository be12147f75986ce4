"""Who acted: a governance act counts only when the actor proved who they are.

Two proofs are accepted. On the dashboard, OIDC sign-in with an e-mail the identity provider
verified (the dashboard records ``authenticated: true, via: dashboard``). On the command line, a
signature over the act's statement by an Ed25519 key registered beside the person in the plan
(``keys`` of an owner, a task owner or the plan's approver), made with ``--key PATH`` to the
private key (OpenSSH or PEM; a passphrase from ``MEDMON_KEY_PASSPHRASE``) and verified here by
the ``cryptography`` library. Anything else is recorded as ``unauthenticated``: the entry's actor
is the operating-system account, the e-mail typed is kept as ``claimed_by``, and the act changes
nothing (an ``unproven_act`` entry, never an approval). The OS account is recorded every time.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from sqlmodel import Session

from medmon.monitor.errors import GovernanceError
from medmon.monitor.governance.audit import AuditKind, canonical, local_actor, record
from medmon.monitor.models import AuditEvent
from medmon.monitor.plan.model import Plan
from medmon.monitor.plan.people import Person

UNAUTHENTICATED = "unauthenticated"
PASSPHRASE_ENV = "MEDMON_KEY_PASSPHRASE"
SIGNED_PREFIX = b"medmon governance act v1\n"  # signatures made for medmon cannot be replayed elsewhere


@dataclass(frozen=True)
class Identity:
    """Who performed an act, and how that is known.

    ``actor`` is what the audit entry names: the proven e-mail, or the OS account marked
    unauthenticated. ``details`` go into the entry beside the act's own facts.
    """

    actor: str
    authenticated: bool
    via: str  # "cli-key", "dashboard" or "cli" (nothing proven)
    os_user: str
    claimed_by: str | None = None
    key_fingerprint: str | None = None
    statement: str | None = None
    signature: str | None = None

    @property
    def email(self) -> str | None:
        """The proven e-mail, or None."""
        return self.actor if self.authenticated else None

    @property
    def words(self) -> str:
        """How the record says it, e.g. 'owner@x (signed with key SHA256:ab..)' or '... (unauthenticated)'."""
        if self.via == "cli-key":
            return f"{self.actor} (signed with key {self.key_fingerprint})"
        if self.via == "dashboard":
            return f"{self.actor} (verified by the dashboard's sign-in)"
        return f"{self.actor} (unauthenticated; claimed {self.claimed_by})" if self.claimed_by else self.actor

    def details(self) -> dict[str, Any]:
        return {
            "authenticated": self.authenticated,
            "via": self.via,
            "os_user": self.os_user,
            "claimed_by": self.claimed_by,
            "key_fingerprint": self.key_fingerprint,
            "statement": self.statement,
            "signature": self.signature,
        }


def people(plan: Plan) -> Iterator[Person]:
    """Everyone the plan names: owners, task owners and the go-live approver."""
    yield plan.owners.clinical
    yield plan.owners.technical
    for task in plan.tasks:
        if task.owner is not None:
            yield task.owner
    if plan.governance is not None and plan.governance.approval is not None:
        yield plan.governance.approval.approved_by


def registered_keys(plan: Plan, email: str) -> list[Ed25519PublicKey]:
    """The Ed25519 public keys the plan registers for this e-mail (on any of the person's entries)."""
    out: list[Ed25519PublicKey] = []
    for person in people(plan):
        if person.email.strip().lower() == email.strip().lower():
            for line in person.keys:
                key = serialization.load_ssh_public_key(line.encode("ascii"))
                if isinstance(key, Ed25519PublicKey):
                    out.append(key)
    return out


def fingerprint(key: Ed25519PublicKey) -> str:
    """The key's SHA-256 fingerprint as ``ssh-keygen -l`` prints it (``SHA256:...``)."""
    blob = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).split()[1]
    digest = hashlib.sha256(base64.b64decode(blob)).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def statement_of(act: str, subject: str, by: str, facts: Mapping[str, Any]) -> str:
    """The canonical text a signature covers: the act, its subject, the person and its facts."""
    return canonical({"act": act, "subject": subject, "by": by.strip().lower(), "facts": dict(facts)})


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """An Ed25519 private key from an OpenSSH or PEM file (passphrase from ``MEDMON_KEY_PASSPHRASE``)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise GovernanceError(f"--key {path}: cannot read it ({exc.strerror})") from None
    secret = os.environ.get(PASSPHRASE_ENV)
    password = secret.encode("utf-8") if secret else None
    try:
        key: object = (
            serialization.load_ssh_private_key(data, password)
            if b"OPENSSH PRIVATE KEY" in data
            else serialization.load_pem_private_key(data, password)
        )
    except (ValueError, TypeError) as exc:
        raise GovernanceError(
            f"--key {path}: not a readable private key ({exc}); an encrypted key needs {PASSPHRASE_ENV}"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise GovernanceError(f"--key {path}: only Ed25519 keys are accepted (ssh-keygen -t ed25519)")
    return key


def verify_statement(plan: Plan, by: str, statement: str, signature: bytes) -> str | None:
    """The fingerprint of the registered key of ``by`` that made ``signature`` over ``statement``, or None."""
    for key in registered_keys(plan, by):
        try:
            key.verify(signature, SIGNED_PREFIX + statement.encode("utf-8"))
        except InvalidSignature:
            continue
        return fingerprint(key)
    return None


def cli_identity(
    plan: Plan, *, by: str, act: str, subject: str, facts: Mapping[str, Any], key: Path | None, tool: str
) -> Identity:
    """Who is acting from the command line: ``by`` proven by ``key``, or unauthenticated.

    A key given but not registered to ``by`` in the plan is refused (exit 2), not downgraded:
    the person meant to prove something and did not.
    """
    os_user = local_actor(tool)
    if key is None:
        return Identity(f"{os_user} ({UNAUTHENTICATED})", False, "cli", os_user, claimed_by=by)
    statement = statement_of(act, subject, by, facts)
    signature = load_private_key(key).sign(SIGNED_PREFIX + statement.encode("utf-8"))
    found = verify_statement(plan, by, statement, signature)
    if found is None:
        registered = len(registered_keys(plan, by))
        raise GovernanceError(
            f"--key {key} is not registered to {by} in the plan "
            f"({registered} key(s) registered for {by}; add the public key under that person's 'keys')"
        )
    return Identity(
        by.strip().lower(),
        True,
        "cli-key",
        os_user,
        claimed_by=by,
        key_fingerprint=found,
        statement=statement,
        signature=base64.b64encode(signature).decode("ascii"),
    )


def counts(details: Mapping[str, Any] | None) -> bool:
    """Whether an entry's actor was proven: a sign-in or a registered key. Entries older than
    identity recording carry no ``authenticated`` field and do not count as proven either."""
    return bool((details or {}).get("authenticated") is True)


def record_unproven(
    session: Session, identity: Identity, act: str, subject: str, facts: Mapping[str, Any], now: datetime
) -> AuditEvent:
    """Record an act whose actor proved nothing: kept for the record, never counted as the act."""
    return record(
        session, AuditKind.unproven_act, identity.actor, subject, {"act": act, **dict(facts), **identity.details()}, now
    )


def proof_words(details: Mapping[str, Any] | None) -> str:
    """How an entry's actor is known, in the words every surface uses.

    >>> proof_words({"authenticated": True, "via": "cli-key", "key_fingerprint": "SHA256:ab"})
    'signed with key SHA256:ab'
    >>> proof_words({"authenticated": False, "via": "cli", "os_user": "ann@host via medmon"})
    'unauthenticated (ann@host via medmon): not counted'
    >>> proof_words({})
    'identity not recorded: not counted'
    """
    d = details or {}
    if d.get("authenticated") is True:
        if d.get("via") == "cli-key":
            return f"signed with key {d.get('key_fingerprint')}"
        return "verified by the dashboard's sign-in"
    if d.get("authenticated") is False:
        return f"{UNAUTHENTICATED} ({d.get('os_user') or 'local user'}): not counted"
    return "identity not recorded: not counted"


def require_proof(details: Mapping[str, Any] | None, what: str) -> None:
    """Refuse an approval whose actor proved nothing (the command line records it as an unproven act instead)."""
    if not counts(details):
        raise GovernanceError(
            f"{what} needs a proven identity: sign with --key (a key registered beside you in the plan) "
            "or act on the dashboard after sign-in"
        )
