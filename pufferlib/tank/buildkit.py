"""BuildKit's build progress, as the Engine API streams it, printed the way `docker build
--progress=plain` does:

    #7 [compiled 3/3] RUN --mount=type=cache,... python setup.py build_ext --inplace
    #7 1.52 compiling ocean/squared/binding.c
    #7 DONE 9.8s
    #8 [stage-3 5/6] COPY . .
    #8 CACHED

The daemon sends each update as a `moby.buildkit.trace` message: a base64 protobuf
`moby.buildkit.v1.StatusResponse` (buildkit's api/services/control/control.proto). Only the few
fields printed here are decoded, by the protobuf wire format directly; docker-py has no BuildKit
support and this keeps the host's needs to docker-py alone.
"""

import base64

# StatusResponse fields
VERTEXES, LOGS = 1, 3
# Vertex fields
DIGEST, NAME, CACHED, STARTED, COMPLETED, ERROR = 1, 3, 4, 5, 6, 7
# VertexLog fields
LOG_VERTEX, LOG_MESSAGE = 1, 4
# google.protobuf.Timestamp fields
SECONDS, NANOS = 1, 2


def varint(data, position):
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7


def fields(data):
    """[(field number, value)] of one message: varints as int, length-delimited fields as bytes."""
    found, position = [], 0
    while position < len(data):
        key, position = varint(data, position)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, position = varint(data, position)
        elif wire_type == 2:
            length, position = varint(data, position)
            value, position = data[position : position + length], position + length
        elif wire_type in (1, 5):
            width = 8 if wire_type == 1 else 4
            value, position = data[position : position + width], position + width
        else:
            raise ValueError(f"protobuf wire type {wire_type} is not used by BuildKit's status messages")
        found.append((number, value))
    return found


def timestamp(data):
    values = dict(fields(data))
    return values.get(SECONDS, 0) + values.get(NANOS, 0) / 1e9


class Progress:
    """Prints BuildKit's vertexes and their logs as they arrive, and remembers each vertex's outcome."""

    def __init__(self, out):
        self.out = out
        self.numbers = {}  # vertex digest -> its number in the printout
        self.names = {}
        self.started = {}
        self.finished = set()
        self.outcomes = {}  # vertex name -> "CACHED", "DONE" or "ERROR"
        self.partial = {}  # vertex digest -> the start of a log line still to come

    def number(self, digest, name):
        if digest not in self.numbers:
            self.numbers[digest] = len(self.numbers) + 1
            self.names[digest] = name
            print(f"#{self.numbers[digest]} {name}", file=self.out)
        return self.numbers[digest]

    def trace(self, encoded):
        for kind, value in fields(base64.b64decode(encoded)):
            if kind == VERTEXES:
                self.vertex(dict(fields(value)))
            elif kind == LOGS:
                self.log(dict(fields(value)))
        self.out.flush()

    def vertex(self, vertex):
        digest, name = vertex[DIGEST].decode(), vertex.get(NAME, b"").decode()
        if not name or (STARTED not in vertex and CACHED not in vertex):
            return  # unnamed internal work, or queued and not begun: printed when it starts
        number = self.number(digest, name)
        if STARTED in vertex:
            self.started.setdefault(digest, timestamp(vertex[STARTED]))
        if digest in self.finished or (COMPLETED not in vertex and ERROR not in vertex):
            return
        self.finished.add(digest)
        self.print_lines(number, [self.partial.pop(digest, "")])
        if ERROR in vertex:
            outcome = "ERROR"
            print(f"#{number} ERROR: {vertex[ERROR].decode()}", file=self.out)
        elif vertex.get(CACHED):
            outcome = "CACHED"
            print(f"#{number} CACHED", file=self.out)
        else:
            outcome = "DONE"
            seconds = timestamp(vertex[COMPLETED]) - self.started.get(digest, timestamp(vertex[COMPLETED]))
            print(f"#{number} DONE {seconds:.1f}s", file=self.out)
        self.outcomes[name] = outcome

    def log(self, entry):
        """Prints the complete lines of a log chunk; the daemon splits output anywhere, even mid-line."""
        digest = entry[LOG_VERTEX].decode()
        number = self.number(digest, self.names.get(digest, digest))
        text = self.partial.pop(digest, "") + entry.get(LOG_MESSAGE, b"").decode(errors="replace")
        lines = text.replace("\r", "\n").split("\n")
        if lines[-1]:
            self.partial[digest] = lines[-1]
        self.print_lines(number, lines[:-1])

    def print_lines(self, number, lines):
        for line in lines:
            if line.strip():
                print(f"#{number} {line}", file=self.out)
