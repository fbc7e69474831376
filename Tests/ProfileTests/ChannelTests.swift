import Bluetooth
import Testing

@testable import Profile

/// `channels`: L2CAP channels in a profile, their rules (`open`, `sdu`, `close`) and actions (`send`, `stream`,
/// `closeChannel`), and what the decoder refuses.
@Suite struct ChannelTests {
    static let json = #"""
        {"format": 1,
         "services": [{"id": "files", "uuid": "12345678-0000-4000-8000-000000000001", "characteristics": [
           {"id": "status", "uuid": "12345678-0000-4000-8000-000000000002", "flags": ["read"]}]}],
         "channels": [
           {"id": "data", "psm": "any", "mtu": 512, "publish": "files"},
           {"id": "log", "psm": "0x0081", "security": "encrypted", "maximumOpen": 2}],
         "state": {"opened": 0},
         "rules": [
           {"on": {"open": "data"}, "do": [{"set": {"opened": {"increment": 1}}}, {"send": "data", "value": "48 49"}]},
           {"id": "ping", "on": {"sdu": "data", "equals": "01"}, "do": {"send": "data", "value": "81 {request}"}, "stop": true},
           {"id": "get", "on": {"sdu": "data", "prefix": "02"}, "do": {"stream": "data", "bytes": 1048576}},
           {"id": "file", "on": {"sdu": "data", "prefix": "03"}, "do": {"stream": "data", "file": "blob.bin"}},
           {"id": "bye", "on": {"sdu": "data", "prefix": "04"}, "do": {"closeChannel": "data"}},
           {"id": "all", "on": {"sdu": "log"}, "do": {"send": "data", "value": "EE"}},
           {"id": "gone", "on": {"close": "data"}, "do": {"log": "closed"}}]}
        """#

    func engine() throws -> BehaviourEngine {
        BehaviourEngine(profile: try loadProfile(Self.json, file: "channels.json"), environment: adapter)
    }

    @Test func theSectionDecodes() throws {
        let profile = try loadProfile(Self.json)
        #expect(profile.channels.map(\.id) == ["data", "log"])
        #expect(profile.channels[0].psm == .any)
        #expect(profile.channels[0].mtu == 512)
        #expect(profile.channels[1].psm == .fixed(0x81))
        #expect(profile.channels[1].security == .encrypted)
        #expect(profile.channels[1].maximumOpen == 2)
        // The published PSM: Apple's characteristic in the service named, readable, 2 bytes, until the kernel picks.
        let published = try #require(profile.characteristic("data-psm"))
        #expect(published.uuid == .l2capPSM)
        #expect(published.flags == [.read])
        #expect(profile.services[0].characteristics.map(\.id) == ["status", "data-psm"])
    }

    @Test func rulesAnswerTheChannelThatSpoke() throws {
        var engine = try engine()
        let first = ChannelLink(id: 1, central: phone)
        let second = ChannelLink(id: 2, central: otherPhone)
        let opened = engine.handle(.channelOpen(channel: "data", link: first))
        #expect(opened.effects == [.send(channel: "data", value: [0x48, 0x49], links: [1])])
        _ = engine.handle(.channelOpen(channel: "data", link: second))
        #expect(engine.state["opened"] == .number(2))
        let ping = engine.handle(.sdu(channel: "data", link: second, value: [0x01]))
        #expect(ping.firedRules == ["ping"])
        #expect(ping.effects == [.send(channel: "data", value: [0x81, 0x01], links: [2])])
        // A rule on another channel sends on every open channel of the one it names.
        let fromLog = engine.handle(.sdu(channel: "log", link: ChannelLink(id: 3, central: phone), value: [9]))
        #expect(fromLog.effects.isEmpty, "an SDU of a channel the engine has not seen open is not handled")
        _ = engine.handle(.channelOpen(channel: "log", link: ChannelLink(id: 3, central: phone)))
        #expect(
            engine.handle(.sdu(channel: "log", link: ChannelLink(id: 3, central: phone), value: [9])).effects == [
                .send(channel: "data", value: [0xEE], links: [1, 2])
            ])
        #expect(
            engine.handle(.sdu(channel: "data", link: first, value: [0x02])).effects == [
                .stream(channel: "data", source: .pattern(bytes: 1_048_576), links: [1])
            ])
        #expect(
            engine.handle(.sdu(channel: "data", link: first, value: [0x03])).effects == [
                .stream(channel: "data", source: .file("blob.bin"), links: [1])
            ])
        #expect(engine.handle(.sdu(channel: "data", link: first, value: [0x04])).effects == [.closeChannel(channel: "data", links: [1])])
        let closed = engine.handle(.channelClose(channel: "data", link: first))
        #expect(closed.firedRules == ["gone"])
        #expect(engine.openChannels["data"] == [second])
        // The link going down forgets its channels.
        _ = engine.handle(.disconnect(otherPhone))
        #expect(engine.openChannels["data"] == [])
        #expect(engine.handle(.channelClose(channel: "data", link: second)).firedRules == [])
    }

    @Test func theDecoderSaysWhatIsWrong() {
        func channel(_ body: String, rules: String = "[]") -> [String] {
            problems(
                #"{"format": 1, "services": [{"id": "s", "uuid": "180f", "characteristics": []}], "channels": ["#
                    + body + #"], "rules": "# + rules + "}")
        }
        #expect(channel(#"{"id": "a", "psm": 39}"#).contains { $0.contains("PSM 0x0027 is bluetoothd's own (EATT)") })
        #expect(channel(#"{"id": "a", "psm": 256}"#).contains { $0.contains("PSM 256 is not an LE PSM") })
        #expect(channel(#"{"id": "a", "psm": "12x"}"#).contains { $0.contains("\"12x\" is not a number") })
        #expect(channel(#"{"id": "a", "psm": 128, "mtu": 22}"#).contains { $0.contains("channels[0].mtu: 22 is out of range 23...65535") })
        #expect(channel(#"{"id": "a", "psm": "any", "security": "encrypt"}"#).contains { $0.contains("did you mean \"encrypted\"") })
        #expect(channel(#"{"id": "a", "psm": "any", "publish": "t"}"#).contains { $0.contains("unknown service \"t\"") })
        #expect(
            channel(#"{"id": "a", "psm": 128}, {"id": "b", "psm": "0x80"}"#).contains { $0.contains("PSM 0x0080 is already channel a's") })
        #expect(channel(#"{"id": "a", "psm": "any"}, {"id": "a", "psm": "any"}"#).contains { $0.contains("duplicate channel id \"a\"") })
        #expect(
            channel(#"{"id": "a", "psm": "any"}"#, rules: #"[{"on": {"sdu": "b"}, "do": {"send": "a", "value": "01"}}]"#)
                .contains { $0.contains("rules[0].on.sdu: unknown channel \"b\"") })
        #expect(
            channel(#"{"id": "a", "psm": "any"}"#, rules: #"[{"on": {"open": "a"}, "do": {"stream": "a"}}]"#)
                .contains { $0.contains("a stream needs \"bytes\"") })
        #expect(
            channel(#"{"id": "a", "psm": "any"}"#, rules: #"[{"on": {"open": "a"}, "do": {"stream": "a", "bytes": 1, "value": "01"}}]"#)
                .contains { $0.contains("\"value\" does not apply to a \"stream\" action") })
        #expect(
            channel(#"{"id": "a", "psm": "any"}"#, rules: #"[{"on": {"open": "a", "prefix": "01"}, "do": {"log": "x"}}]"#)
                .contains { $0.contains("\"prefix\" only applies to write and sdu triggers") })
        #expect(
            channel(#"{"id": "a", "psm": "any"}"#, rules: #"[{"on": {"sdu": "a", "prefix": "01"}, "do": {"closeChannel": "a"}}]"#) == [])
    }
}
