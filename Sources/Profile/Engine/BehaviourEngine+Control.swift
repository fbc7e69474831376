extension BehaviourEngine {
    /// Stores a value set from outside the rules (control API notify / set value).
    public mutating func store(_ value: [UInt8], for characteristic: String) {
        values[characteristic] = value
    }

    /// Switches the advertisement variant as an `advertise` action would; returns the effects to run.
    public mutating func switchAdvertisement(to variant: String?) -> [Effect] {
        advertisementVariant = variant
        markAdvertisementsPublished()
        return [.switchAdvertisement(variant: variant)]
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
