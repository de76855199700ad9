package invite_test

import (
	"crypto/ed25519"
	"fmt"
	"log"
	"time"

	"github.com/waitroom/waitroom/internal/invite"
)

// An operator's backend mints invites offline with its Ed25519 private key;
// the room's invite_keys holds the public half. The waitroom server is not
// asked, so a shop can hand out invites from its own checkout or mailer.
//
// The key and ID are fixed here so the output is a test vector for
// implementations in other languages: Ed25519 signatures are deterministic.
// The payload of the token below is
//
//	{"alg":"ed","room":"drop","id":"order-1042","tier":"members","key":"customer-77","uses":2,"exp":1893456000}
//
// and the seed is the bytes 0 to 31.
func ExampleSignEd25519() {
	// In production: the seed from "waitroom invite keygen", read from a
	// secret store, and an ID from invite.NewID.
	priv, err := invite.ParsePrivateKey("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("invite_keys:", invite.FormatPublicKey(priv.Public().(ed25519.PublicKey)))

	tok, err := invite.SignEd25519(invite.Claims{
		Room:    "drop",
		ID:      "order-1042",
		Tier:    "members",
		Key:     "customer-77",
		Uses:    2,
		Expires: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
	}, priv)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("token:", tok)
	fmt.Println("link: https://queue.example.com/r/drop#invite=" + tok)

	// What the server does when the person follows the link.
	pub, err := invite.ParsePublicKey("A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=")
	if err != nil {
		log.Fatal(err)
	}
	now := time.Date(2029, 6, 1, 0, 0, 0, 0, time.UTC)
	c, err := invite.Verify(tok, "drop", now, nil, []ed25519.PublicKey{pub})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("verified: room %s, id %s, tier %s, key %s, %d uses, expires %s\n",
		c.Room, c.ID, c.Tier, c.Key, c.Uses, c.Expires.UTC().Format(time.RFC3339))
	// Output:
	// invite_keys: A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=
	// token: wr1.eyJhbGciOiJlZCIsInJvb20iOiJkcm9wIiwiaWQiOiJvcmRlci0xMDQyIiwidGllciI6Im1lbWJlcnMiLCJrZXkiOiJjdXN0b21lci03NyIsInVzZXMiOjIsImV4cCI6MTg5MzQ1NjAwMH0.pgNIKezuA1xTvU5Ntdm2Ctbs9rwdH76BEViTentJG1jVb-N6_zuEaWKDnndXicuNw73dLMNNs4SpGBknmUh1Bw
	// link: https://queue.example.com/r/drop#invite=wr1.eyJhbGciOiJlZCIsInJvb20iOiJkcm9wIiwiaWQiOiJvcmRlci0xMDQyIiwidGllciI6Im1lbWJlcnMiLCJrZXkiOiJjdXN0b21lci03NyIsInVzZXMiOjIsImV4cCI6MTg5MzQ1NjAwMH0.pgNIKezuA1xTvU5Ntdm2Ctbs9rwdH76BEViTentJG1jVb-N6_zuEaWKDnndXicuNw73dLMNNs4SpGBknmUh1Bw
	// verified: room drop, id order-1042, tier members, key customer-77, 2 uses, expires 2030-01-01T00:00:00Z
}
