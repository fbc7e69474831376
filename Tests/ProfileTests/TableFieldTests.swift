import Testing

@testable import Profile

/// `present` on services and `fragment` on characteristics.
@Suite struct TableFieldTests {
    static func profile(present: String = "false", fragment: String = "true", flags: String = #"["notify"]"#) -> String {
        """
        { "format": 1, "services": [
            { "id": "s", "uuid": "180f", "characteristics": [ { "id": "level", "uuid": "2a19", "flags": \(flags), "fragment": \(fragment) } ] },
            { "id": "update", "uuid": "12345678-0000-4000-8000-0000000000aa", "present": \(present), "characteristics": [] } ] }
        """
    }

    @Test func presentAndFragmentAreRead() throws {
        let profile = try loadProfile(Self.profile())
        #expect(profile.services.map(\.present) == [true, false])
        #expect(profile.characteristics.first?.fragment == true)
        #expect(try loadProfile(Self.profile(fragment: "false")).characteristics.first?.fragment == false)
    }

    @Test func mistakesAreLocated() {
        let notify = problems(Self.profile(flags: #"["read"]"#))
        #expect(notify.contains { $0.contains("services[0].characteristics[0].fragment") && $0.contains("notifications") }, "\(notify)")
        let type = problems(Self.profile(present: "\"no\""))
        #expect(type.contains { $0.contains("services[1].present") && $0.contains("true or false") }, "\(type)")
    }

    /// A number written as a string is decimal digits or `0x` and hex digits, nothing else: a sign is refused (`"+1"`,
    /// `"0x+1"`; schema.json's patterns say the same). Failed before: both were read as 1 (Swift's `Int("+1")`).
    @Test func numberStringsAreDigitsOnly() throws {
        func appearance(_ text: String) -> String {
            #"{ "format": 1, "device": { "appearance": "\#(text)" }, "services": [ { "id": "s", "uuid": "180f", "characteristics": [] } ] }"#
        }
        #expect(try loadProfile(appearance("0x03C1")).device.appearance == 0x03C1)
        #expect(try loadProfile(appearance("961")).device.appearance == 961)
        for bad in ["+1", "0x+1", "-1", "0x-1", "0x", "", " 1", "1 ", "0x 1", "١"] {
            let found = problems(appearance(bad))
            #expect(found.contains { $0.contains("device.appearance") && $0.contains("is not a number") }, "\(bad): \(found)")
        }
    }
}
