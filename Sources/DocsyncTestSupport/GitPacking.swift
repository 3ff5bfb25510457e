import Foundation

/// For the tests of git's automatic maintenance after docsync's commits: repository settings
/// under which it packs the loose objects as soon as there is one (git's default `gc --auto`
/// waits for about 6,700), and the packs a repository holds.
public enum GitPacking {
    /// `git config` keys and values: the loose-objects task on, from one object; gc off.
    public static let onFirstLooseObject = [
        ("maintenance.gc.enabled", "false"), ("maintenance.loose-objects.enabled", "true"), ("maintenance.loose-objects.auto", "1"),
    ]

    /// How many packs the repository whose work tree is `workTree` holds.
    public static func packs(in workTree: String) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: workTree + "/.git/objects/pack")) ?? []).filter { $0.hasSuffix(".pack") }.count
    }
}
