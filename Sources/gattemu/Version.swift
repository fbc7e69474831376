/// gattemu's version, printed by `gattemu --version`.
///
/// A plain `swift build` says `0.0.0-dev`; `scripts/package` writes the version `scripts/version` derives from
/// `git describe` into this file for the build it packages, and puts this line back afterwards.
enum Version {
    static let current = "0.0.0-dev"
}
