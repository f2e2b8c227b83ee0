#!/usr/bin/python3
"""Rebuilds the seed corpora fuzz/corpus/scribe_*/ from the golden fixtures of
docs/protocol/scribe.md (the same bytes tests/scribe and tests/repos check).
Run from anywhere; commit the result.

  scribe_frame     request frames (header + payload), back to back
  scribe_hello     selector byte + hello / hello-ok payload
  scribe_request   opcode byte + codec byte + request payload
  scribe_response  opcode byte + codec byte + flags byte + response payload
  scribe_objects   selector byte + object / node / proof / path bytes
  scribe_branch    opcode byte + codec byte + side byte (0 request, 1 response)
                   + payload, from tests/scribe/branch_fixtures.txt (whose log
                   entries also seed scribe_request and scribe_response)
  scribe_lock      the same framing, from tests/scribe/lock_fixtures.txt
  scribe_workspace the same framing, from tests/scribe/workspace_fixtures.txt
  scribe_public    the same framing, from tests/scribe/public_fixtures.txt
  scribe_gw        the same framing, from tests/scribe/gw_fixtures.txt, and
                   opcode 0 (names mode) + two bytes + a name or REPO
"""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
BRANCH_FIXTURES = os.path.join(HERE, "..", "tests", "scribe", "branch_fixtures.txt")
LOCK_FIXTURES = os.path.join(HERE, "..", "tests", "scribe", "lock_fixtures.txt")
PUBLIC_FIXTURES = os.path.join(HERE, "..", "tests", "scribe", "public_fixtures.txt")
WS_FIXTURES = os.path.join(HERE, "..", "tests", "scribe", "workspace_fixtures.txt")
GW_FIXTURES = os.path.join(HERE, "..", "tests", "scribe", "gw_fixtures.txt")


def fx(text):
    """Hex pairs, spaces ignored, "quoted" runs as ASCII (the doc's notation)."""
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c.isspace():
            i += 1
        elif c == '"':
            j = text.index('"', i + 1)
            out += text[i + 1:j].encode()
            i = j + 1
        else:
            out.append(int(text[i:i + 2], 16))
            i += 2
    return bytes(out)


ID0 = "000102030405060708090a0b0c0d0e0f"
ID1 = "101112131415161718191a1b1c1d1e1f"
ID2 = "202122232425262728292a2b2c2d2e2f"
ID3 = "303132333435363738393a3b3c3d3e3f"
ID4 = "404142434445464748494a4b4c4d4e4f"
CHUNK = "ea8f163db38682925e4491c5e58d4bb3506ef8c14eb78a86e908c5624a67200f"
MANIFEST = "8dc7a813a81f2748f277006c88e6bd3b9a1f754bbc9486a92e81948fd7d103a1"
CHANGESET = "d199e5245c55ff3d06db681dd0a733182b7166ecb9cb24adea079037bb89ab6c"
CROOT = "5ab8008cab68dc4710ceab43cd2831ece0cc0a65ef0446e60754dd9869797996"
RROOT = "aac3195eeaf787fe1747008fca15233a291b9cd607e1149a7aeb0603d096bab6"
COMMIT = "54e5920c5c0672cbcf8e1ee894d195db8aaa8fd5cd52d4dd048363d07879cfca"
LEAF_HASH = "2f7ba7d8b9dfc71ba25aaac833d272f84c608db662c9b5e2263bcaf635071eea"

HELLO = fx('02 00 01 01 00 00 00 00 00 00 00 00 00 00 00 09 00 "cairn/0.1"')
HELLO_OK = fx("02 00 01 08 07 06 05 04 03 02 01 2c 01 00 00 01")

REQUESTS = {  # (opcode, codec) -> payload
    "repo_create": (3, 1, fx('03 00 "art" 01')),
    "repo_create_be": (3, 2, fx('00 03 "art" 01')),
    "repo_info": (4, 1, fx('02 03 00 "art"')),
    "repo_info_id": (4, 1, fx("01 " + ID0)),
    "repo_list": (5, 1, fx('64 00 00 00 01 03 00 "tok"')),
    "put_objects": (6, 1, fx(ID0 + " 01000000 01 " + CHUNK + " 0500000000000000")),
    "get_objects": (7, 1, fx(ID0 + " 01000000 01 " + CHUNK)),
    "presence": (8, 1, fx(ID0 + " 02000000 01 " + CHUNK + " 02 " + MANIFEST)),
    "submit": (9, 1, fx(ID0 + ID2 + ID3 + ID1 + ID4 + " 0000000000000000 " + CHANGESET +
                        ' 00 0300 "ann" 05000000 "add a"')),
    "operation_outcome": (10, 1, fx(ID0 + ID3)),
    "tree_page": (11, 1, fx(ID0 + ID1 + " 0100000000000000 0000 64000000 00")),
    "tree_page_after": (11, 2, fx(ID0 + ID1 + ' 0000000000000001 0003 "art" 00000064 01 0009 "art/a.png"')),
    "changed_paths": (13, 1, fx(ID0 + ID1 + ' 0900000000000000 0300000000000000 0300 "art" 0a000000 01 0600 "opaque"')),
    "log": (15, 1, fx(ID0 + ID1 + ' 01 0500 "a.txt" 00 00 00 01 0900000000000000 01 0500 "a.txt" 32000000')),
    "log_all": (15, 1, fx(ID0 + ID1 + ' 01 0100 "a" 01 01 01 0400000000000000 00 00 01000000')),
    "instance_status": (26, 1, fx("01 " + ID0)),
    "repo_usage": (38, 1, fx(ID0)),
    "describe_change": (39, 1, fx(ID0 + ' 0100000000000000 00000000 0300 "ann" 04000000 "why?"')),
    "change_notes": (40, 1, fx(ID0 + " 02000000 0100000000000000 0200000000000000")),
    "change_note_history": (41, 1, fx(ID0 + " 0100000000000000 00000000 00040000")),
    "pin_objects": (42, 1, fx(ID0 + ID4 + ID3 + " 01000000 01 " + CHUNK)),
}

NOTE = ' 0100000000000000 01000000 0300 "ann" 0900000000000000 04000000 "why?"'
INFO = (ID0 + ' 0300 "art" ' + ID1 + " 0700000000000000 " + ID2 + " 0068e5cf8b010000 01")
RESPONSES = {  # (opcode, codec, flags) -> payload
    "discover": (2, 1, 0, fx("01 00 01 00 00 00 00 00")),
    "discover_gateway": (2, 1, 0, fx('02 01 02 00 00 00 06 00 "studio" 0a 00 "publishing"')),
    "repo_info": (4, 1, 0, fx(INFO)),
    "repo_list": (5, 1, 0, fx("01000000 " + INFO + ' 01 0300 "tok"')),
    "put_objects": (6, 1, 0, fx("03 00 00 00 01 00 01")),
    "get_objects": (7, 1, 0, fx("01000000")),
    "presence": (8, 1, 0, fx("0a 00 00 00 05 02")),
    "submit_accepted": (9, 1, 0, fx(ID3 + " 01 0100000000000000 " + COMMIT)),
    "submit_rejected": (9, 1, 0, fx(ID3 + ' 02 ca00 0900000000000000 0400 "late" 01000000 0500 "a.txt"')),
    "operation_outcome": (10, 1, 0, fx("01 " + ID3 + " 01 0100000000000000 " + COMMIT)),
    "operation_unknown": (10, 1, 0, fx("00")),
    "tree_page": (11, 1, 0, fx('01000000 0500 "a.txt" ' + MANIFEST + " 0500000000000000 00 0100000000000000 00 " +
                               CROOT + " " + RROOT)),
    "changed_paths": (13, 1, 0, fx('01000000 0500 "a.txt" 0100000000000000 01 ' + MANIFEST +
                                   " 0500000000000000 00 00")),
    "log": (15, 1, 0, fx("01000000 0100000000000000 " + COMMIT + " " + ID1 + ' 0400 "main" 0000000000000000'
                         ' 0500 "a.txt" 01 0300 "ann" 05000000 "add a" 0100000000000000 00 00')),
    "repo_usage": (38, 1, 0, fx("0010000000000000")),
    "describe_change": (39, 1, 0, fx(NOTE)),
    "change_notes": (40, 1, 0, fx("02000000 01" + NOTE + " 00")),
    "change_note_history": (41, 1, 0, fx("01000000" + NOTE + " 00")),
    "error": (9, 1, 1, fx('d4 00 05 00 "stale"')),
    "error_be": (9, 2, 1, fx('00 d4 00 05 "stale"')),
}

LEAF = ('01 0500 "a.txt" 01 0100000000000000 ' + MANIFEST + " 0500000000000000 00"
        " 0100000000000000 0100000000000000 0100000000000000 0000 0000 0000")
ROOT = ('01 0000 00 0100000000000000 0100000000000000 0100000000000000 0500 "a.txt" 0500 "a.txt"'
        " 0100 61 " + LEAF_HASH + " 0100000000000000 0100000000000000 0100000000000000")


def framed(*nodes):
    out = b""
    for n in nodes:
        out += struct.pack("<I", len(n)) + n
    return out


OBJECTS = {
    "manifest": b"\x01" + fx("01 0500000000000000 01000000 " + CHUNK + " 05000000"),
    "manifest_empty": b"\x01" + fx("01 0000000000000000 00000000"),
    "changeset": b"\x02" + fx('01 01000000 01 0500 "a.txt" ' + MANIFEST + " 00"),
    "changeset_kinds": b"\x02" + fx('01 05000000 03 0100 "a" 04 0300 "b/c" 0100 "z" ' + MANIFEST +
                                    ' 01 05 0300 "b/d" 02 0100 "c" ' + MANIFEST + ' 02 01 0100 "d" ' +
                                    MANIFEST + " 00"),
    "commit": b"\x03" + fx("01 " + ID0 + " " + ID1 + " 0100000000000000 00 " + CHANGESET +
                           ' 0300 "ann" 05000000 "add a" 0068e5cf8b010000 ' + CROOT + " " + RROOT + " 00"),
    "node_root": b"\x04" + fx(ROOT),
    "node_leaf": b"\x04" + fx(LEAF),
    "proof": b"\x05" + framed(fx(ROOT), fx(LEAF)),
    "proof_empty": b"\x05" + framed(fx("01 0000 00 0000000000000000 0000000000000000 0000000000000000 0000 0000 0000")),
    "path": b"\x06" + "Art/Caf\u00e9/hero.PNG".encode(),
    "path_bad": b"\x06" + b"a/../b",
}


def branch_fixtures(path=BRANCH_FIXTURES):
    """The entries of a fixture file in branch_fixtures.txt's format:
    (name, opcode, side, codec, payload)."""
    entries, cur = [], None
    with open(path) as f:
        for line in f:
            if line.startswith("@"):
                _, name, op, side, codec = line.split()
                cur = [name, int(op), side, 1 if codec == "le" else 2, ""]
                entries.append(cur)
            elif cur is not None:
                quoted, text = False, ""
                for ch in line:
                    if ch == '"':
                        quoted = not quoted
                    if ch == "#" and not quoted:
                        break
                    text += ch
                cur[4] += text + " "
    return [(n, op, side, codec, fx(text)) for n, op, side, codec, text in entries]


def header(op, length, rid=1, flags=0):
    return b"SCR1" + struct.pack("<HHQII", op, flags, rid, length, 0)


def write(name, seeds):
    d = os.path.join(CORPUS, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for key, data in seeds.items():
        with open(os.path.join(d, key), "wb") as f:
            f.write(data)


def lock_seeds(path=LOCK_FIXTURES):
    """scribe_lock and scribe_workspace: opcode byte + codec byte + side
    byte + payload, from a fixture file (tests/scribe/lock_fixtures.txt by
    default)."""
    return {"%s_%s" % (name, "le" if codec == 1 else "be"):
            bytes([op, codec, 0 if side == "req" else 1]) + payload
            for name, op, side, codec, payload in branch_fixtures(path)}


def gw_seeds():
    """scribe_gw: the gateway wire's fixtures, and names-mode seeds."""
    seeds = lock_seeds(GW_FIXTURES)
    for i, name in enumerate([b"art", b"studio/art", b"h:7447/studio/art",
                              b"scribe://host/art", b"scribes://host:7448/ns/art",
                              b"a/b/c", b"..", b"[::1]:7447/art"]):
        seeds["name_%d" % i] = b"\x00\x01\x00" + name
    return seeds


def main():
    write("scribe_hello", {
        "hello": b"\x00" + HELLO,
        "hello_test_codec": b"\x02" + HELLO[:2] + b"\x02" + HELLO[3:],
        "hello_v1": b"\x00" + b"\x01\x00" + HELLO[2:],
        "hello_ok": b"\x04" + HELLO_OK,
        "hello_v4": b"\x01" + fx("04 00 01 00 00 00 00 00 00 00 00 00 00 00 00 01 00 \"x\" 02 05 00 \"PEM..\"") + bytes(32),
    })
    frames = {"hello": header(1, len(HELLO)) + HELLO}
    for key, (op, codec, payload) in REQUESTS.items():
        if codec == 1:
            frames[key] = header(1, len(HELLO)) + HELLO + header(op, len(payload), 2) + payload
    frames["discover"] = header(1, len(HELLO)) + HELLO + header(2, 0, 2)
    frames["bad_reserved"] = header(2, 0)[:20] + b"\x01\x00\x00\x00"
    frames["over_bound"] = header(10, 33)
    write("scribe_frame", frames)
    requests = {k: bytes([op, c]) + p for k, (op, c, p) in REQUESTS.items()}
    responses = {k: bytes([op, c, fl]) + p for k, (op, c, fl, p) in RESPONSES.items()}
    branch = {}
    for name, op, side, codec, payload in branch_fixtures():
        key = "%s_%s" % (name, "le" if codec == 1 else "be")
        if op == 15 and side == "req":
            requests[key] = bytes([op, codec]) + payload
        elif op == 15:
            responses[key] = bytes([op, codec, 2 if side == "resp-all" else 0]) + payload
        else:
            branch[key] = bytes([op, codec, 0 if side == "req" else 1]) + payload
    write("scribe_request", requests)
    write("scribe_response", responses)
    write("scribe_branch", branch)
    write("scribe_lock", lock_seeds())
    write("scribe_workspace", lock_seeds(WS_FIXTURES))
    write("scribe_public", lock_seeds(PUBLIC_FIXTURES))
    write("scribe_gw", gw_seeds())
    write("scribe_objects", OBJECTS)


if __name__ == "__main__":
    main()
