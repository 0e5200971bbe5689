// Package release holds Vigil's version, in the source: a clone, an
// archive or a vendored copy knows it without the repository's tags,
// which do not always travel with the code.
package release

// Version is Vigil's version: vX.Y.Z in the commit of a release, and the
// next release's with -dev between releases (docs/versioning.md).
const Version = "v0.2.0-dev"
