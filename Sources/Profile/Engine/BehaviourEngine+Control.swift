import Bluetooth

extension BehaviourEngine {
    /// Stores a value set from outside the rules (control API notify / set value).
    public mutating func store(_ value: [UInt8], for characteristic: CharacteristicID) {
        values[characteristic] = value
    }

    /// Switches the advertisement variant as an `advertise` action would; returns the effects to run.
    public mutating func switchAdvertisement(to variant: String?) -> [Effect] {
        advertisementVariant = variant
        markAdvertisementsPublished()
        return [.switchAdvertisement(variant: variant)]
    }

    /// Sets a variable or state value from outside the rules (control API), as a `set` action would (a
    /// `connectionState` value for every connected central too). Returns the effects to run: a
    /// `switchAdvertisement` when the advertisements now say something else. Unknown names change nothing.
    public mutating func setNamedValue(_ name: String, to value: ProfileValue) -> [Effect] {
        if state[name] != nil {
            state[name] = value
            if profile.connectionState.contains(name) {
                for central in connectionStates.keys { connectionStates[central]?[name] = value }
            }
        } else if variables[name] != nil {
            variables[name] = value
        } else {
            return []
        }
        var outcome = EngineOutcome()
        publishAdvertisementChanges(into: &outcome)
        return outcome.effects
    }

    /// The effects of the device starting (or being reset): the timers that start with it (`"start": "run"`).
    public mutating func started() -> [Effect] {
        var outcome = EngineOutcome()
        for timer in profile.timers where timer.startOnRun { schedule(timer, after: nil, into: &outcome) }
        return outcome.effects
    }

    /// Back to the profile's initial state (as ``reset()``), keeping the centrals that are still connected
    /// and their subscriptions, since the link layer does not forget them.
    public mutating func resetKeepingConnections() {
        let (connected, subscribed) = (centrals, subscribers)
        reset()
        centrals = connected
        subscribers = subscribed
    }
}
