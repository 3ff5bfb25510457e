import Crypto
import Foundation

/// The recovery key as a person copies it: 32 bytes in base32 (RFC 4648's alphabet), 52 letters
/// and digits in groups of four. Read back leniently: case, spaces and dashes do not matter.
enum RecoveryKey {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")

    static func text(of key: SymmetricKey) -> String {
        let bytes = key.withUnsafeBytes { Array($0) }
        var bits = 0, value = 0
        var letters: [Character] = []
        for byte in bytes {
            value = value << 8 | Int(byte)
            bits += 8
            while bits >= 5 {
                letters.append(alphabet[(value >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        if bits > 0 { letters.append(alphabet[(value << (5 - bits)) & 31]) }
        return stride(from: 0, to: letters.count, by: 4).map { String(letters[$0..<min($0 + 4, letters.count)]) }.joined(separator: "-")
    }

    static func key(from text: String) -> SymmetricKey? {
        var bits = 0, value = 0
        var bytes: [UInt8] = []
        for character in text.uppercased() where character != "-" && !character.isWhitespace {
            guard let digit = alphabet.firstIndex(of: character) else { return nil }
            value = (value << 5 | digit) & 0xFFFF
            bits += 5
            if bits >= 8 {
                bytes.append(UInt8((value >> (bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return bytes.count == 32 ? SymmetricKey(data: bytes) : nil
    }
}
