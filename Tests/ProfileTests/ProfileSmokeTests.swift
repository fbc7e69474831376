import Testing
@testable import Profile

@Test func ProfileModuleLoads() { #expect(Bool(true)) }
