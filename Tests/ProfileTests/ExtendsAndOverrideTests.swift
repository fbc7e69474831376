import Testing

@testable import Profile

@Suite struct ExtendsAndOverrideTests {
    func fixture(_ name: String) throws -> String {
        try Paths.fixtures.appendingPathComponent("extends").appendingPathComponent(name).path
    }

    @Test func mergesObjectsDeeplyAndIdentifiedItemsById() throws {
        let profile = try ProfileLoader.load(path: try fixture("child.json"))
        #expect(profile.deviceName(environment: adapter) == "BASEBB")
        #expect(profile.device.appearance == 1)
        #expect(profile.initialVariables == ["code": .string("BB"), "count": .number(1)])
        #expect(profile.services.map(\.id) == ["main", "extra"])
        let main = try #require(profile.services.first)
        #expect(main.uuid.description == "0000180f-0000-1000-8000-00805f9b34fb")
        #expect(main.characteristics.map(\.id) == ["a", "b", "c"])
        #expect(main.characteristics[0].flags == [.read])  // kept from the base
        #expect(BehaviourEngine(profile: profile, environment: adapter).value(of: "a") == [0x02])
        // Arrays without ids are replaced, and the replacement is merged as a whole item.
        let advertisement = profile.advertisement(variant: nil, environment: adapter)
        #expect(advertisement.localName == "CHILD")
        #expect(advertisement.serviceUUIDs == [])
    }

    @Test func diagnosticsPointIntoTheFileThatHasTheProblem() throws {
        let diagnostics = ProfileValidator.validate(path: try fixture("grandchild.json"))
        #expect(diagnostics.count == 1)
        let diagnostic = try #require(diagnostics.first)
        #expect(diagnostic.file.hasSuffix("extends/grandchild.json"))
        #expect(diagnostic.line == 3)
        #expect(diagnostic.path == "services[0].characteristics[1].flags[0]")
        #expect(diagnostic.message == "unknown flag \"notiffy\"")
        #expect(diagnostic.hint == "did you mean \"notify\"?")
    }

    @Test func setOverridesAddressItemsByIdOrIndex() throws {
        let profile = try ProfileLoader.load(
            path: try fixture("child.json"),
            overrides: [
                ("variables.code", "2P"),
                ("variables.count", "7"),
                ("services.main.characteristics.b.uuid", "2a99"),
                ("services[1].primary", "false"),
                ("advertisements.0.localName", "{code}!"),
                ("variables.newOne", "{\"hex\": \"0102\"}"),
            ])
        #expect(profile.initialVariables["code"] == .string("2P"))
        #expect(profile.initialVariables["count"] == .number(7))
        #expect(profile.initialVariables["newOne"] == .bytes([1, 2]))
        #expect(profile.characteristic("b")?.uuid.description == "00002a99-0000-1000-8000-00805f9b34fb")
        #expect(profile.services[1].primary == false)
        #expect(profile.advertisement(variant: nil, environment: adapter).localName == "2P!")
    }

    @Test(arguments: [
        (
            "services.nope.uuid", "1234",
            "--set services.nope.uuid:1:1 services.nope.uuid: no item with id \"nope\" in services (ids: main, extra)"
        ),
        (
            "services.mian.uuid", "1234",
            "--set services.mian.uuid:1:1 services.mian.uuid: no item with id \"mian\" in services (did you mean \"main\"?)"
        ),
        ("services[5].uuid", "1234", "--set services[5].uuid:1:1 services[5].uuid: index 5 is out of range: services has 2 items"),
        ("device.name.x", "1", "--set device.name.x:1:1 device.name.x: device.name is a string, not an object or array"),
        ("a..b", "1", "--set a..b:1:1 a..b: malformed path \"a..b\" (write keys separated by dots, e.g. variables.hardwareCode)"),
        (
            "services.main.uuid", "zz",
            "--set services.main.uuid:1:1 services[0].uuid: \"zz\" is not a UUID (use 16-bit (\"180f\"), 32-bit or 128-bit (\"1bc50001-0200-d29e-e511-446c609db825\") form)"
        ),
    ])
    func badOverridesGiveClearMessages(path: String, value: String, expected: String) throws {
        let diagnostics = ProfileValidator.validate(path: try fixture("child.json"), overrides: [(path, value)])
        #expect(diagnostics.map(\.description) == [expected])
    }

    @Test func overrideValuesKeepTheKindTheyReplace() throws {
        let profile = try ProfileLoader.load(path: try fixture("child.json"), overrides: [("variables.code", "12")])
        #expect(profile.initialVariables["code"] == .string("12"))
        let diagnostics = ProfileValidator.validate(path: try fixture("child.json"), overrides: [("variables.count", "many")])
        #expect(
            diagnostics.map(\.description) == [
                "--set variables.count:1:1 variables.count: variables.count is a number, not text like \"many\" (give a number, e.g. 3000)"
            ])
    }

    @Test func sourceMapLocatesPathsForOtherModules() throws {
        let profile = try ProfileLoader.load(path: Paths.profile("noke-lock.json"))
        let location = try #require(profile.location(of: "advertisements[0].localName"))
        #expect(location.file.hasSuffix("profiles/noke-lock.json"))
        #expect(location.line > 1)
        // Unknown deeper paths fall back to the nearest known parent.
        #expect(profile.location(of: "advertisements[0].localName.nothing") == location)
        let diagnostic = profile.diagnostic(at: "advertisements[0].localName", message: "advertising data is 33 bytes, over 31")
        #expect(
            diagnostic.description.hasSuffix(
                "noke-lock.json:\(location.line):\(location.column) advertisements[0].localName: advertising data is 33 bytes, over 31"))
        #expect(profile.location(of: "[[[") == nil)
    }

    @Test func jsonPathsRoundTrip() {
        #expect(JSONPath.components(of: "a.b[0][\"c.d\"].e") == [.key("a"), .key("b"), .index(0), .key("c.d"), .key("e")])
        #expect(JSONPath.components(of: "services.0.uuid") == [.key("services"), .key("0"), .key("uuid")])
        #expect(JSONPath.components(of: "") == nil)
        #expect(JSONPath.components(of: "a.") == nil)
        #expect(JSONPath.components(of: "a[x]") == nil)
        #expect(JSONPath.appending("c.d", to: JSONPath.appending("0xFFFF", to: JSONPath.appending(2, to: "a"))) == "a[2].0xFFFF[\"c.d\"]")
        #expect(JSONPath.appending("über_1-$", to: "a") == "a.über_1-$")  // letters beyond ASCII need no quotes
        #expect(JSONPath.appending("a b\"", to: "") == "[\"a b\\\"\"]")
    }
}
