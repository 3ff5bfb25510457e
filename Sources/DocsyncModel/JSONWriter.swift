import Glibc

/// Serialises a ``JSONValue`` back to text: numbers as their literal, keys in order, UTF-8 unescaped.
public enum JSONWriter {
    public enum Style: Sendable {
        /// No insignificant whitespace: the wire and storage form.
        case compact
        /// Two-space indent, `": "` between key and value, for files people read and diff in git.
        case pretty
    }

    /// `capacity`: the length expected, when known (the text the value was parsed from), so the
    /// output is not grown and copied on the way.
    public static func bytes(_ value: JSONValue, style: Style = .compact, capacity: Int = 256) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(capacity)
        var layout = Layout(style)
        write(value, into: &out, layout: &layout, indent: 0)
        return out
    }

    public static func string(_ value: JSONValue, style: Style = .compact, capacity: Int = 256) -> String {
        String(decoding: bytes(value, style: style, capacity: capacity), as: UTF8.self)
    }

    /// The range of `text` (a JSON text that parses) that is already the compact form of what it
    /// parses to, the bytes `bytes(_:)` would write: the whole text less whitespace around it,
    /// provided there is none between its tokens and no escape in its strings (an escape may be
    /// written otherwise: `\u00e9` comes out as `é`). `nil` otherwise.
    public static func compactRange(of text: [UInt8]) -> Range<Int>? {
        text.withUnsafeBufferPointer { b -> Range<Int>? in
            guard let base = b.baseAddress else { return nil }
            func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 }
            var start = 0
            var end = b.count
            while start < end, isSpace(b[start]) { start += 1 }
            while end > start, isSpace(b[end - 1]) { end -= 1 }
            /// The offset of the first `byte` at or after `from`, else `end` (memchr: most of a
            /// document is the inside of its strings, skipped a vector at a time).
            func find(_ byte: UInt8, from: Int) -> Int {
                guard from < end, let p = memchr(base + from, Int32(byte), end - from) else { return end }
                return base.distance(to: p.assumingMemoryBound(to: UInt8.self))
            }
            if find(UInt8(ascii: "\\"), from: start) < end { return nil }
            // Without escapes every quote opens or closes a string: only the bytes between
            // strings are looked at.
            var i = start
            while i < end {
                let open = find(UInt8(ascii: "\""), from: i)
                for j in i..<open where isSpace(b[j]) { return nil }
                if open == end { break }
                i = find(UInt8(ascii: "\""), from: open + 1) + 1
            }
            return start..<end
        }
    }

    /// The pretty form followed by a newline, as a file on disk should end; the compact form where
    /// the pretty one would be larger than `limit` bytes or hold more than ``maxIndentShare``
    /// bytes of indentation to one of content (beyond ``indentSlack``).
    ///
    /// Indentation grows with depth: a value 250 levels down takes 500 spaces, so a 1 MB document
    /// of small numbers that deep made a 250 MB file (a 16 MB one, 4 GB), all of it held in
    /// memory first, and then a file the folder's own limit refused. Written compact, a document
    /// takes on disk what it took on the wire. The pretty form is given up as soon as it passes
    /// `limit` or its indentation passes the share by a MiB: what is held stays bounded.
    public static func fileBytes(_ value: JSONValue, limit: Int = DocumentRules.defaultMaxFileSize) -> [UInt8] {
        var out: [UInt8] = []
        var layout = Layout(.pretty, limit: limit)
        write(value, into: &out, layout: &layout, indent: 0)
        if layout.givenUp || out.count >= limit || layout.indentPasses(of: out.count, beyond: indentSlack) {
            out = bytes(value, style: .compact)
        }
        out.append(0x0A)
        return out
    }

    /// The largest file ``fileBytes(_:limit:)`` makes of a pulled document: pretty within
    /// `limit`, or compact, no larger than the page it came in. A file larger than this is not one
    /// docsync wrote, and is not read whole to find that out.
    public static func largestFile(limit: Int) -> Int { max(limit, ProtocolLimits.maxPageBytes) + 1 }

    /// The most indentation a file is written with, per byte of its content (its compact form).
    /// Documents people write come nowhere near it: a flat one has well under one; numbers four
    /// levels deep, one a line, about four.
    public static let maxIndentShare = 8
    /// Indentation any document may have beyond the share: a small one a dozen levels deep.
    public static let indentSlack = 512

    /// How a value is laid out, and, for a file, how much of it is indentation so far.
    private struct Layout {
        let style: Style
        /// A file's bounds are kept (``fileBytes(_:limit:)``); `nil`: the whole text is written.
        let limit: Int?
        /// The bytes of newlines, indents and the space after `:` written so far.
        var spaces = 0
        /// The pretty form passed its bounds: the rest is not written.
        var givenUp = false

        init(_ style: Style, limit: Int? = nil) {
            self.style = style
            self.limit = limit
        }

        /// Whether the indentation in `written` bytes passes ``maxIndentShare`` of the rest
        /// (the content) by more than `slack`.
        func indentPasses(of written: Int, beyond slack: Int) -> Bool {
            spaces > JSONWriter.maxIndentShare * (written - spaces) + slack
        }
    }

    private static func write(_ value: JSONValue, into out: inout [UInt8], layout: inout Layout, indent: Int) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let literal): out.append(contentsOf: literal.utf8)
        case .string(let s): writeString(s, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            if elements.isEmpty { out.append(UInt8(ascii: "]")); return }
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(into: &out, layout: &layout, indent: indent + 1)
                if layout.givenUp { return }
                write(element, into: &out, layout: &layout, indent: indent + 1)
            }
            newline(into: &out, layout: &layout, indent: indent)
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            if object.isEmpty { out.append(UInt8(ascii: "}")); return }
            for (i, member) in object.members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(into: &out, layout: &layout, indent: indent + 1)
                if layout.givenUp { return }
                writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                if case .pretty = layout.style {
                    out.append(UInt8(ascii: " "))
                    layout.spaces += 1
                }
                write(member.value, into: &out, layout: &layout, indent: indent + 1)
            }
            newline(into: &out, layout: &layout, indent: indent)
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func newline(into out: inout [UInt8], layout: inout Layout, indent: Int) {
        guard case .pretty = layout.style else { return }
        out.append(0x0A)
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
        layout.spaces += 1 + indent * 2
        guard let limit = layout.limit else { return }
        if out.count > limit || layout.indentPasses(of: out.count, beyond: 1 << 20) { layout.givenUp = true }
    }

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        if s.utf8.withContiguousStorageIfAvailable({ writeEscaped($0, into: &out) }) == nil {
            writeEscaped(Array(s.utf8), into: &out)
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Copies runs that need no escape in one go (most strings are one such run: the writer's hot
    /// path) and escapes the bytes between them.
    private static func writeEscaped(_ bytes: some RandomAccessCollection<UInt8>, into out: inout [UInt8]) {
        var runStart = bytes.startIndex
        var i = bytes.startIndex
        while i != bytes.endIndex {
            let byte = bytes[i]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else {
                i = bytes.index(after: i)
                continue
            }
            out.append(contentsOf: bytes[runStart..<i])
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x08: out.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            default:
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                out.append(lowercaseHexDigit(byte >> 4))
                out.append(lowercaseHexDigit(byte & 0xF))
            }
            i = bytes.index(after: i)
            runStart = i
        }
        out.append(contentsOf: bytes[runStart..<i])
    }
}

extension JSONValue: CustomStringConvertible {
    public var description: String { JSONWriter.string(self) }
}

/// The lowercase hex digit of `nibble` (0...15), for hashes and `\u00XX` escapes alike. (Here, not
/// beside the hashes: the writer is built into the fuzzers, which leave swift-crypto out.)
func lowercaseHexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
}
