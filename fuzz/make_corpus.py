#!/usr/bin/python3
"""Rebuilds the seed corpora fuzz/corpus/<harness>/ from the hand-written golden
fixtures in tests/jay/golden (run from anywhere; commit the result).

  jay_handshake  the client hello, every server reply, and a few refusals
  jay_header     the 17-byte header of every fixture frame
  jay_request    opcode byte + metadata of every request fixture
  jay_response   opcode byte + status byte + metadata of every response fixture
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "tests", "jay", "golden")
CORPUS = os.path.join(HERE, "corpus")

# Which request opcode each response fixture answers.
RESP_OPS = {
    "resp_put_object": 0x10, "resp_upload_part": 0x21, "resp_get_object": 0x11,
    "resp_head_object": 0x12, "resp_get_object_range": 0x15, "resp_copy_object": 0x16,
    "resp_list_objects": 0x14, "resp_list_buckets": 0x04, "resp_head_bucket": 0x03,
    "resp_complete_multipart": 0x22, "resp_list_parts": 0x24,
    "resp_create_multipart": 0x20, "resp_empty": 0x01,
    "resp_error_not_found": 0x11, "resp_error_unknown_op": 0xFF,
}


def parse_hex(text):
    out = bytearray()
    for line in text.splitlines():
        i = 0
        while i < len(line):
            c = line[i]
            if c == "#":
                break
            if c == '"':
                j = line.index('"', i + 1)
                out += line[i + 1:j].encode("ascii")
                i = j + 1
            elif c.isspace():
                i += 1
            else:
                out.append(int(line[i:i + 2], 16))
                i += 2
    return bytes(out)


def write(harness, name, data):
    d = os.path.join(CORPUS, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    for fn in sorted(os.listdir(GOLDEN)):
        if not fn.endswith(".hex"):
            continue
        name = fn[:-4]
        with open(os.path.join(GOLDEN, fn)) as f:
            data = parse_hex(f.read())
        if name == "hello" or name.startswith("welcome_"):
            write("jay_handshake", name, data)
        elif name == "header":
            write("jay_header", name, data)
        elif name.startswith("req_"):
            write("jay_header", name, data[:17])
            write("jay_request", name, data[:1] + data[17:])
        elif name.startswith("resp_"):
            write("jay_header", name, data[:17])
            write("jay_response", name, bytes([RESP_OPS[name], data[0]]) + data[17:])
    write("jay_handshake", "bad_magic_http", b"GET / HTTP/1.1\r\n\r\n")
    write("jay_handshake", "version_2", bytes.fromhex("4a41590002000003") + b"a:b")
    write("jay_handshake", "auth_len_zero", bytes.fromhex("4a41590001000000"))
    write("jay_handshake", "torn", bytes.fromhex("4a415900010000ff") + b"ab")
    write("jay_header", "negative_data_len", bytes.fromhex("1000000000000000" "00ffffffffffffffff"))
    write("jay_header", "meta_len_over_1mib", bytes.fromhex("1000000000001000" "010000000000000000"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
