// Package seal authenticates and encrypts what Vigil hands to a component
// outside its process (Redis records, relays, stored events, request
// states) under one secret, the cluster key, so that the component can
// drop or delay what it holds but cannot forge, alter, replay or read it.
// A previous key is accepted beside the current one during a rotation.
//
// The primitives are the standard library's: HKDF-SHA256 derives a MAC
// key and an encryption key from each cluster key, HMAC-SHA256
// authenticates, AES-256-GCM encrypts.
package seal
