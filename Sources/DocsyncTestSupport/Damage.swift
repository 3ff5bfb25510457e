/// Copies of a file's bytes as a broken disk or another program may leave them, for the tests of
/// the readers of such files (a git index, a loose object).
public enum Damage {
    /// `whole` cut at about `count` evenly spaced lengths, from nothing up to (not) the whole.
    public static func cuts(of whole: [UInt8], count: Int) -> [[UInt8]] {
        stride(from: 0, to: whole.count, by: max(1, whole.count / count)).map { Array(whole[..<$0]) }
    }

    /// `count` copies of `whole`, each with 1 to `most` bytes at random places changed (never to
    /// the value they had).
    public static func changed(_ whole: [UInt8], count: Int, most: Int) -> [[UInt8]] {
        var random = SystemRandomNumberGenerator()
        return (0..<count).map { _ in
            var bytes = whole
            for _ in 0..<Int.random(in: 1...most, using: &random) { bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random) }
            return bytes
        }
    }
}
