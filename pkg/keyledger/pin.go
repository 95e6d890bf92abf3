package keyledger

// PickKey is Pick restricted to one key of a provider, by fingerprint: for
// a request that must reach the account that holds its state (a Responses
// API follow-up of a response the key created). It returns that key when
// it is usable, else an [*UnusableError] (ReasonMissing when the provider
// no longer has the key at all). A provider configured without keys gets
// the zero Key and no error when fingerprint is empty.
func (l *Ledger) PickKey(provider, model, fingerprint string) (Key, error) {
	l.mu.Lock()
	ks, ok := l.keys[provider]
	l.mu.Unlock()
	if !ok && fingerprint == "" {
		return Key{}, nil
	}
	now := l.opt.Now()
	for _, k := range ks {
		if k.Fingerprint != fingerprint {
			continue
		}
		l.mu.Lock()
		e := l.entryLocked(provider, k.Fingerprint)
		l.mu.Unlock()
		l.fresh(e, now)
		l.mu.Lock()
		why := l.why(e, model, now)
		at := l.usableAt(e, model, now)
		l.mu.Unlock()
		if why == "" {
			return k, nil
		}
		return Key{}, &UnusableError{Provider: provider, Reason: why, Until: at}
	}
	return Key{}, &UnusableError{Provider: provider, Reason: ReasonMissing}
}
