import Testing

@testable import Profile

@Suite struct ShippedProfileTests {
    @Test(arguments: ["noke-lock.json", "leaf-reader.json", "leaf-reader-brvo.json", "bleproof.json"])
    func validates(name: String) {
        let diagnostics = ProfileValidator.validate(path: Paths.profile(name))
        #expect(diagnostics.map(\.description) == [])
    }
}
