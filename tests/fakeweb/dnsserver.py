"""Authoritative-looking DNS server answering from a World's rules (UDP and TCP)."""

from __future__ import annotations

import asyncio
import random
import struct

import dns.exception
import dns.flags
import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from .eventlog import EventLog
from .world import World

RCODES = {
    "nxdomain": dns.rcode.NXDOMAIN,
    "servfail": dns.rcode.SERVFAIL,
    "refused": dns.rcode.REFUSED,
}


class DnsResponder:
    """Turns a query's wire bytes into reply bytes, or None to stay silent."""

    def __init__(self, world: World, log: EventLog):
        """Answer from world's rules, logging every query to log."""
        self.world = world
        self.log = log
        self.silent = False  # run-time switch: drop every query
        self.nxdomain = False  # run-time switch: every name "does not exist" (a lying resolver)

    def delay(self) -> float:
        """Seconds the next reply waits (the world's slow DNS), 0 for none."""
        if not self.world.dns_delay:
            return 0.0
        return random.uniform(*self.world.dns_delay)

    def respond(self, wire: bytes, proto: str) -> bytes | None:
        """Reply to one query message; None means send nothing."""
        try:
            query = dns.message.from_wire(wire)
        except dns.exception.DNSException:
            return None
        if not query.question:
            return None
        question = query.question[0]
        name = question.name.to_text(omit_final_dot=True)
        rule, origin = self.world.match(name)
        switched = self.silent or self.nxdomain
        kind = "silent" if self.silent else "nxdomain" if self.nxdomain else rule["kind"]
        self.log.write(
            event="query",
            name=name.lower(),
            qname=name,
            type=dns.rdatatype.to_text(question.rdtype),
            answer=kind,
            address=rule["address"] if kind == "a" else None,
            proto=proto,
            switched_off=switched,
        )
        if kind == "silent":
            return None
        return self._reply(query, rule, kind, origin).to_wire()

    def _reply(self, query, rule: dict, kind: str, origin: str) -> dns.message.Message:
        """Build the response message for a rule."""
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA | dns.flags.RA
        question = query.question[0]
        if kind in RCODES:
            response.set_rcode(RCODES[kind])
        wants_a = question.rdtype in (dns.rdatatype.A, dns.rdatatype.ANY)
        if kind == "cname":
            self._cname(response, question.name, rule)
        elif kind == "a" and wants_a:
            ttl = rule["ttl"] if rule["ttl"] is not None else self.world.ttl
            response.answer.append(
                dns.rrset.from_text(question.name, ttl, "IN", "A", rule["address"])
            )
        elif kind in ("a", "nxdomain", "noanswer"):
            # Negative answers carry the SOA so resolvers can cache them
            # for min(SOA TTL, SOA minimum) = negative_ttl (RFC 2308).
            response.authority.append(self._soa(origin))
        return response

    def _cname(self, response: dns.message.Message, name, rule: dict) -> None:
        """The CNAME (or the chain of them: World.cname_chain), then the target's A record
        when it has one (no chains of chains). Whole, whatever its size, over UDP too."""
        ttl = rule["ttl"] if rule["ttl"] is not None else self.world.ttl
        target = rule["target"] + "."
        for hop in [*(f"{via}." for via in rule.get("via", ())), target]:
            response.answer.append(dns.rrset.from_text(name, ttl, "IN", "CNAME", hop))
            name = hop
        address = self.world.address_of(rule["target"])
        if address is not None:
            response.answer.append(dns.rrset.from_text(target, ttl, "IN", "A", address))

    def _soa(self, origin: str) -> dns.rrset.RRset:
        """SOA record of origin whose TTL and minimum are the negative TTL."""
        neg = self.world.negative_ttl
        text = f"ns.fakeweb.test. hostmaster.fakeweb.test. 1 3600 600 86400 {neg}"
        return dns.rrset.from_text(origin + ".", neg, "IN", "SOA", text)


class DnsUdpProtocol(asyncio.DatagramProtocol):
    """UDP transport for a DnsResponder."""

    def __init__(self, responder: DnsResponder):
        """Serve responder's answers."""
        self.responder = responder
        self.transport = None

    def connection_made(self, transport) -> None:
        """Keep the transport to send replies."""
        self.transport = transport

    def datagram_received(self, data: bytes, addr) -> None:
        """Answer one datagram."""
        reply = self.responder.respond(data, "udp")
        if reply is None:
            return
        delay = self.responder.delay()
        if delay:
            asyncio.get_running_loop().call_later(delay, self.transport.sendto, reply, addr)
        else:
            self.transport.sendto(reply, addr)


def tcp_handler(responder: DnsResponder):
    """asyncio.start_server callback serving length-prefixed DNS over TCP."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        """Answer queries until the client closes."""
        try:
            while True:
                (length,) = struct.unpack("!H", await reader.readexactly(2))
                reply = responder.respond(await reader.readexactly(length), "tcp")
                if reply is not None:
                    await asyncio.sleep(responder.delay())
                    writer.write(struct.pack("!H", len(reply)) + reply)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    return handle
