package web

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
)

// Messages is the text of the pages in one language. Templates reach it as
// .T (for example {{.T.Heading}}). Placeholders in braces ({n}, {low},
// {high}, {room}) are filled in by the handler or by the page script.
type Messages struct {
	// Lang is the BCP 47 tag of the language ("en").
	Lang string
	// Title names the page: "Waiting room".
	Title string
	// TitlePosition prefixes the document title while waiting: "No. {n} in line".
	TitlePosition string
	// Heading and Intro head the waiting page.
	Heading string
	Intro   string
	// NoScript explains the automatic reload to visitors without JavaScript.
	NoScript string
	// KeepOpen asks the visitor to keep the page open.
	KeepOpen string
	// PositionLabel, AheadLabel, WaitingLabel and ETALabel label the numbers.
	PositionLabel string
	AheadLabel    string
	WaitingLabel  string
	ETALabel      string
	// ProgressLabel names the progress indicator for screen readers.
	ProgressLabel string
	// AnnouncePosition, AheadOne, AheadOther and Next make the sentence
	// announced to screen readers: "You are number {n} in line. 2 people are
	// ahead of you."
	AnnouncePosition string
	AheadOne         string
	AheadOther       string
	Next             string
	// ETA texts: no estimate yet, under a minute, about n minutes or hours,
	// or a range.
	ETAUnknown      string
	ETAUnderMinute  string
	ETAMinuteOne    string
	ETAMinuteOther  string
	ETAMinuteRange  string
	ETAHourOne      string
	ETAHourOther    string
	ETAHourRange    string
	AdmittedHeading string
	AdmittedBody    string
	Continue        string
	ServedHeading   string
	ServedBody      string
	EndedHeading    string
	EndedBody       string
	JoinAgain       string
	// Error pages.
	NotFoundTitle    string
	NotFoundBody     string
	PageNotFound     string
	BadRoomTitle     string
	BadRoomBody      string
	UnavailableTitle string
	UnavailableBody  string
	BusyTitle        string
	BusyBody         string
	ErrorTitle       string
	ErrorBody        string
	// CrossSiteTitle and CrossSiteBody refuse a form another site sent.
	CrossSiteTitle string
	CrossSiteBody  string
	// Scheduled rooms ("drops"). Before the opening a visitor waits in a
	// pre-queue: PreHeading heads the page, OpensInLabel and OpensAtLabel
	// label the countdown and the opening time, and TitleOpensIn prefixes
	// the document title ("Opens in {time}", {time} being the countdown).
	PreHeading   string
	OpensInLabel string
	OpensAtLabel string
	TitleOpensIn string
	// EntrantsOne and EntrantsOther count the pre-queue: "{n} people are in
	// the draw".
	EntrantsOne   string
	EntrantsOther string
	// PreIntro explains the draw and that there is no need to hurry;
	// DrawLink links the public draw record; PreKeepOpen asks to keep the
	// page open.
	PreIntro    string
	DrawLink    string
	PreKeepOpen string
	// AnnounceOpensIn is read out on entering the pre-queue and a minute
	// before the opening ({time} in words: "5 minutes"). Drawing stands in
	// for the countdown once the time is up, until the place arrives.
	AnnounceOpensIn string
	Drawing         string
	// AnnounceDrawn prefixes the first announcement of the drawn place;
	// DrawnNote and DrawnIntro stay on the page of a drawn session.
	AnnounceDrawn string
	DrawnNote     string
	DrawnIntro    string
	// ClockDays is a countdown of a day or more: "{n} d {time}", {time}
	// being hours, minutes and seconds.
	ClockDays string
	// MinuteOne to DayOther say a time span in words, after "in".
	MinuteOne   string
	MinuteOther string
	HourOne     string
	HourOther   string
	DayOne      string
	DayOther    string
	// ClosedTitle and ClosedBody are the page of a join after the room's
	// closes_at (below them, the server's own message).
	ClosedTitle string
	ClosedBody  string
	// Rooms with an inventory (stock). StockLeft says what is left to
	// have, neither sold nor reserved: "About {n} left", "about" because
	// it moves. StockUnlikely is shown while more people are ahead than
	// units are left, StockReserved while none is left but some are
	// reserved (and may come back).
	StockLeft     string
	StockUnlikely string
	StockReserved string
	// SoldOutTitle and SoldOutBody say everything was sold: on the page of
	// a session that ended so, and on the page of a join refused for it
	// (below them, the server's own message).
	SoldOutTitle string
	SoldOutBody  string
	// The door of a room that asks for an invite or a proof of work
	// (door.html): its heading, the invite-only text and field label, the
	// check's status texts (DoorFailed ends with the problem), the text
	// without JavaScript and the button.
	DoorHeading    string
	DoorInviteOnly string
	DoorInvite     string
	DoorChecking   string
	DoorProgress   string
	DoorDone       string
	DoorFailed     string
	DoorNoScript   string
	DoorJoin       string
	// TierNote names the visitor's tier ({tier}); TierGrows (strict) and
	// TierGrowsShare (weighted) say why a position may grow.
	TierNote       string
	TierGrows      string
	TierGrowsShare string
	// The claim page of a held place (/claim/{room}/{id}). ClaimHeading
	// heads an invited place's page, ClaimBody says how long the place is
	// held ({time} in words: "9 minutes"), ClaimDeadline labels the end of
	// that time and ClaimButton claims it. ClaimWaitingTitle and
	// ClaimWaitingBody are the page of a place whose turn has not come;
	// ClaimExpiredTitle heads the page of one that ended, ClaimExpiredBody
	// when its time to claim passed and ClaimEndedBody otherwise.
	// ClaimUnknownBody is the page of a link that names no place.
	ClaimHeading      string
	ClaimBody         string
	ClaimDeadline     string
	ClaimButton       string
	ClaimWaitingTitle string
	ClaimWaitingBody  string
	ClaimExpiredTitle string
	ClaimExpiredBody  string
	ClaimEndedBody    string
	ClaimUnknownBody  string
}

// english is the default language and the fallback.
var english = Messages{
	Lang:             "en",
	Title:            "Waiting room",
	TitlePosition:    "No. {n} in line",
	Heading:          "You’re in line",
	Intro:            "Thank you for waiting. We let people in one by one, in the order they arrived, so everyone gets a fair turn.",
	NoScript:         "This page reloads itself every few seconds.",
	KeepOpen:         "Keep this page open. It updates by itself and takes you in as soon as it’s your turn.",
	PositionLabel:    "Your place in line",
	AheadLabel:       "Ahead of you",
	WaitingLabel:     "Waiting in total",
	ETALabel:         "Estimated wait",
	ProgressLabel:    "Your progress in the line",
	AnnouncePosition: "You are number {n} in line.",
	AheadOne:         "{n} person is ahead of you.",
	AheadOther:       "{n} people are ahead of you.",
	Next:             "You’re next.",
	ETAUnknown:       "Not known yet",
	ETAUnderMinute:   "Less than a minute",
	ETAMinuteOne:     "About {n} minute",
	ETAMinuteOther:   "About {n} minutes",
	ETAMinuteRange:   "{low} to {high} minutes",
	ETAHourOne:       "About {n} hour",
	ETAHourOther:     "About {n} hours",
	ETAHourRange:     "{low} to {high} hours",
	AdmittedHeading:  "You’re in",
	AdmittedBody:     "It’s your turn. Thank you for waiting!",
	Continue:         "Continue",
	ServedHeading:    "It’s your turn",
	ServedBody:       "You have been called. Please go ahead.",
	EndedHeading:     "Your visit has ended",
	EndedBody:        "Your place has been given to the next person in line.",
	JoinAgain:        "Join the line again",
	NotFoundTitle:    "Waiting room not found",
	NotFoundBody:     "There is no waiting room called “{room}”. Please check the link you followed.",
	PageNotFound:     "There is nothing at this address. Please check the link you followed.",
	BadRoomTitle:     "This link is not right",
	BadRoomBody:      "“{room}” cannot be the name of a waiting room. Please check the link you followed.",
	UnavailableTitle: "The line is paused",
	UnavailableBody:  "The waiting room cannot reach its records for a moment, so nobody moves. You keep your place; this page will try again by itself.",
	BusyTitle:        "Too many at once",
	BusyBody:         "The waiting room is taking no more people from here right now. This page will try again by itself.",
	ErrorTitle:       "Something went wrong",
	ErrorBody:        "Please reload the page in a moment.",
	CrossSiteTitle:   "Please use this site’s own page",
	CrossSiteBody:    "Another site sent this form, so nothing was changed and your place in line is kept. To do this, use the button on the waiting room’s own page.",
	PreHeading:       "You’re in the draw",
	OpensInLabel:     "The line opens in",
	OpensAtLabel:     "Opening:",
	TitleOpensIn:     "Opens in {time}",
	EntrantsOne:      "{n} person is in the draw",
	EntrantsOther:    "{n} people are in the draw",
	PreIntro:         "When the line opens, everyone in this pre-queue gets a place, in a random order that anyone can check. There is no need to hurry: joining earlier does not get you a better place.",
	DrawLink:         "Check the draw",
	PreKeepOpen:      "Keep this page open. It shows your place as soon as the draw is done.",
	AnnounceOpensIn:  "The line opens in {time}.",
	Drawing:          "The draw is taking place…",
	AnnounceDrawn:    "The draw is done.",
	DrawnNote:        "The draw is done: your place was drawn at random.",
	DrawnIntro:       "Thank you for waiting. We let people in one by one, in the order of the draw, so everyone gets a fair turn.",
	ClockDays:        "{n} d {time}",
	MinuteOne:        "{n} minute",
	MinuteOther:      "{n} minutes",
	HourOne:          "{n} hour",
	HourOther:        "{n} hours",
	DayOne:           "{n} day",
	DayOther:         "{n} days",
	ClosedTitle:      "This line is closed",
	ClosedBody:       "The waiting room is no longer taking people. Those already in line still get their turn.",
	StockLeft:        "About {n} left",
	StockUnlikely:    "There are more people ahead of you than items left, so you may not get one. You can keep your place in case some come back.",
	StockReserved:    "Everything left is reserved right now; you keep your place in case some come back.",
	SoldOutTitle:     "Sold out",
	SoldOutBody:      "Everything has been sold; sorry you did not get one this time.",
	DoorHeading:      "Before you join",
	DoorInviteOnly:   "This line is by invitation. Open the link of your invite, or paste the invite here.",
	DoorInvite:       "Invite",
	DoorChecking:     "Checking your browser before you join the line. This takes a few seconds and needs no clicks.",
	DoorProgress:     "Check in progress",
	DoorDone:         "Done. Joining the line…",
	DoorFailed:       "The check failed; reload the page to try again.",
	DoorNoScript:     "This room asks your browser to solve a small puzzle before you join, which needs JavaScript.",
	DoorJoin:         "Join the line",
	TierNote:         "You wait in the {tier} line.",
	TierGrows:        "People who join a higher tier go ahead of you, so your position can grow.",
	TierGrowsShare:   "Higher tiers get a share of the places, so people who join them after you may go ahead of you and your position can grow.",

	// The claim page of a held place.
	ClaimHeading:      "It’s your turn",
	ClaimBody:         "Your place is held for you for {time}. Claim it now to go in.",
	ClaimDeadline:     "Held until",
	ClaimButton:       "Claim my place",
	ClaimWaitingTitle: "It’s not your turn yet",
	ClaimWaitingBody:  "Your place in line is held for you, so there is no need to keep this page open. You will hear from us when it’s your turn.",
	ClaimExpiredTitle: "This invitation has expired",
	ClaimExpiredBody:  "The time to claim this place has passed, so it went to the next person in line.",
	ClaimEndedBody:    "This place in line has ended, so there is nothing left to claim.",
	ClaimUnknownBody:  "There is no place in line behind this link. Please check the link you were sent.",
}

var german = Messages{
	Lang:             "de",
	Title:            "Warteraum",
	TitlePosition:    "Platz {n}",
	Heading:          "Sie sind in der Warteschlange",
	Intro:            "Danke fürs Warten. Wir lassen alle der Reihe nach ein, in der Reihenfolge ihrer Ankunft, damit jede und jeder fair drankommt.",
	NoScript:         "Diese Seite lädt sich alle paar Sekunden von selbst neu.",
	KeepOpen:         "Lassen Sie diese Seite geöffnet. Sie aktualisiert sich selbst und lässt Sie ein, sobald Sie an der Reihe sind.",
	PositionLabel:    "Ihr Platz in der Schlange",
	AheadLabel:       "Vor Ihnen",
	WaitingLabel:     "Wartende insgesamt",
	ETALabel:         "Geschätzte Wartezeit",
	ProgressLabel:    "Ihr Fortschritt in der Warteschlange",
	AnnouncePosition: "Sie sind auf Platz {n}.",
	AheadOne:         "{n} Person ist vor Ihnen.",
	AheadOther:       "{n} Personen sind vor Ihnen.",
	Next:             "Sie sind als Nächstes dran.",
	ETAUnknown:       "Noch unbekannt",
	ETAUnderMinute:   "Weniger als eine Minute",
	ETAMinuteOne:     "Etwa {n} Minute",
	ETAMinuteOther:   "Etwa {n} Minuten",
	ETAMinuteRange:   "{low} bis {high} Minuten",
	ETAHourOne:       "Etwa {n} Stunde",
	ETAHourOther:     "Etwa {n} Stunden",
	ETAHourRange:     "{low} bis {high} Stunden",
	AdmittedHeading:  "Sie sind dran",
	AdmittedBody:     "Jetzt sind Sie an der Reihe. Danke fürs Warten!",
	Continue:         "Weiter",
	ServedHeading:    "Sie sind an der Reihe",
	ServedBody:       "Sie wurden aufgerufen. Bitte kommen Sie.",
	EndedHeading:     "Ihr Besuch ist beendet",
	EndedBody:        "Ihr Platz ist an die nächste Person in der Schlange gegangen.",
	JoinAgain:        "Erneut anstellen",
	NotFoundTitle:    "Warteraum nicht gefunden",
	NotFoundBody:     "Es gibt keinen Warteraum namens „{room}“. Bitte prüfen Sie den Link.",
	PageNotFound:     "Unter dieser Adresse gibt es nichts. Bitte prüfen Sie den Link.",
	BadRoomTitle:     "Dieser Link stimmt nicht",
	BadRoomBody:      "„{room}“ kann nicht der Name eines Warteraums sein. Bitte prüfen Sie den Link.",
	UnavailableTitle: "Die Warteschlange ist angehalten",
	UnavailableBody:  "Der Warteraum erreicht seine Daten gerade nicht, deshalb geht es kurz nicht weiter. Ihr Platz bleibt erhalten; diese Seite versucht es von selbst noch einmal.",
	BusyTitle:        "Zu viele auf einmal",
	BusyBody:         "Der Warteraum nimmt von hier gerade niemanden mehr auf. Diese Seite versucht es von selbst noch einmal.",
	ErrorTitle:       "Etwas ist schiefgegangen",
	ErrorBody:        "Bitte laden Sie die Seite gleich noch einmal.",
	CrossSiteTitle:   "Bitte nutzen Sie die Seite des Warteraums",
	CrossSiteBody:    "Eine andere Website hat dieses Formular gesendet, daher wurde nichts geändert und Ihr Platz in der Schlange bleibt erhalten. Nutzen Sie dafür die Schaltfläche auf der Seite des Warteraums selbst.",
	PreHeading:       "Sie sind bei der Verlosung dabei",
	OpensInLabel:     "Die Warteschlange öffnet in",
	OpensAtLabel:     "Öffnung:",
	TitleOpensIn:     "Öffnet in {time}",
	EntrantsOne:      "{n} Person ist bei der Verlosung dabei",
	EntrantsOther:    "{n} Personen sind bei der Verlosung dabei",
	PreIntro:         "Wenn die Warteschlange öffnet, bekommen alle in dieser Vorwarteschlange einen Platz, in einer zufälligen Reihenfolge, die jede und jeder nachprüfen kann. Sie müssen sich nicht beeilen: Wer früher kommt, bekommt keinen besseren Platz.",
	DrawLink:         "Verlosung nachprüfen",
	PreKeepOpen:      "Lassen Sie diese Seite geöffnet. Sie zeigt Ihren Platz, sobald die Verlosung stattgefunden hat.",
	AnnounceOpensIn:  "Die Warteschlange öffnet in {time}.",
	Drawing:          "Die Verlosung läuft …",
	AnnounceDrawn:    "Die Verlosung hat stattgefunden.",
	DrawnNote:        "Die Verlosung hat stattgefunden: Ihr Platz wurde zufällig gezogen.",
	DrawnIntro:       "Danke fürs Warten. Wir lassen alle der Reihe nach ein, in der Reihenfolge der Verlosung, damit jede und jeder fair drankommt.",
	ClockDays:        "{n} Tg. {time}",
	MinuteOne:        "{n} Minute",
	MinuteOther:      "{n} Minuten",
	HourOne:          "{n} Stunde",
	HourOther:        "{n} Stunden",
	DayOne:           "{n} Tag",
	DayOther:         "{n} Tagen",
	ClosedTitle:      "Diese Warteschlange ist geschlossen",
	ClosedBody:       "Der Warteraum nimmt niemanden mehr auf. Wer schon in der Schlange steht, kommt noch dran.",
	StockLeft:        "Noch etwa {n} übrig",
	StockUnlikely:    "Vor Ihnen stehen mehr Menschen, als noch Artikel übrig sind, deshalb bekommen Sie vielleicht keinen. Sie können Ihren Platz behalten, falls welche zurückkommen.",
	StockReserved:    "Alles Übrige ist gerade reserviert; Sie behalten Ihren Platz, falls etwas zurückkommt.",
	SoldOutTitle:     "Ausverkauft",
	SoldOutBody:      "Alles ist verkauft; es tut uns leid, dass Sie diesmal keinen Artikel bekommen haben.",
	DoorHeading:      "Bevor Sie sich anstellen",
	DoorInviteOnly:   "Diese Warteschlange ist nur mit Einladung zugänglich. Öffnen Sie den Link Ihrer Einladung oder fügen Sie die Einladung hier ein.",
	DoorInvite:       "Einladung",
	DoorChecking:     "Ihr Browser wird geprüft, bevor Sie sich anstellen. Das dauert einige Sekunden und braucht keinen Klick.",
	DoorProgress:     "Prüfung läuft",
	DoorDone:         "Fertig. Sie werden angestellt …",
	DoorFailed:       "Die Prüfung ist fehlgeschlagen; laden Sie die Seite neu, um es erneut zu versuchen.",
	DoorNoScript:     "Dieser Raum lässt Ihren Browser vor dem Anstellen ein kleines Rätsel lösen; dafür ist JavaScript nötig.",
	DoorJoin:         "Anstellen",
	TierNote:         "Sie warten in der Reihe {tier}.",
	TierGrows:        "Wer sich in einer höheren Stufe anstellt, kommt vor Ihnen an die Reihe; Ihre Position kann also wachsen.",
	TierGrowsShare:   "Höhere Stufen erhalten einen Anteil der Plätze; wer sich dort nach Ihnen anstellt, kann vor Ihnen an die Reihe kommen, und Ihre Position kann wachsen.",

	// The claim page of a held place.
	ClaimHeading:      "Sie sind an der Reihe",
	ClaimBody:         "Ihr Platz wird noch {time} für Sie freigehalten. Nehmen Sie ihn jetzt ein, um hineinzugehen.",
	ClaimDeadline:     "Freigehalten bis",
	ClaimButton:       "Platz einnehmen",
	ClaimWaitingTitle: "Sie sind noch nicht an der Reihe",
	ClaimWaitingBody:  "Ihr Platz in der Schlange wird für Sie freigehalten; Sie müssen diese Seite nicht geöffnet lassen. Sie hören von uns, sobald Sie an der Reihe sind.",
	ClaimExpiredTitle: "Diese Einladung ist abgelaufen",
	ClaimExpiredBody:  "Die Zeit, diesen Platz einzunehmen, ist abgelaufen; er ist an die nächste Person in der Schlange gegangen.",
	ClaimEndedBody:    "Dieser Platz in der Schlange ist beendet; es gibt nichts mehr einzunehmen.",
	ClaimUnknownBody:  "Zu diesem Link gibt es keinen Platz in der Schlange. Bitte prüfen Sie den Link, den Sie erhalten haben.",
}

var french = Messages{
	Lang:             "fr",
	Title:            "Salle d’attente",
	TitlePosition:    "N° {n} dans la file",
	Heading:          "Vous êtes dans la file",
	Intro:            "Merci de votre patience. Nous faisons entrer les personnes une à une, dans leur ordre d’arrivée, pour que chacun passe à son tour.",
	NoScript:         "Cette page se recharge toute seule toutes les quelques secondes.",
	KeepOpen:         "Gardez cette page ouverte. Elle se met à jour toute seule et vous fait entrer dès que c’est votre tour.",
	PositionLabel:    "Votre place dans la file",
	AheadLabel:       "Devant vous",
	WaitingLabel:     "En attente au total",
	ETALabel:         "Attente estimée",
	ProgressLabel:    "Votre progression dans la file",
	AnnouncePosition: "Vous êtes numéro {n} dans la file.",
	AheadOne:         "{n} personne est devant vous.",
	AheadOther:       "{n} personnes sont devant vous.",
	Next:             "Vous êtes le prochain.",
	ETAUnknown:       "Pas encore connue",
	ETAUnderMinute:   "Moins d’une minute",
	ETAMinuteOne:     "Environ {n} minute",
	ETAMinuteOther:   "Environ {n} minutes",
	ETAMinuteRange:   "{low} à {high} minutes",
	ETAHourOne:       "Environ {n} heure",
	ETAHourOther:     "Environ {n} heures",
	ETAHourRange:     "{low} à {high} heures",
	AdmittedHeading:  "C’est à vous",
	AdmittedBody:     "C’est votre tour. Merci d’avoir patienté !",
	Continue:         "Continuer",
	ServedHeading:    "C’est votre tour",
	ServedBody:       "Vous avez été appelé. Allez-y.",
	EndedHeading:     "Votre visite est terminée",
	EndedBody:        "Votre place a été donnée à la personne suivante.",
	JoinAgain:        "Reprendre une place dans la file",
	NotFoundTitle:    "Salle d’attente introuvable",
	NotFoundBody:     "Il n’y a pas de salle d’attente nommée « {room} ». Vérifiez le lien que vous avez suivi.",
	PageNotFound:     "Il n’y a rien à cette adresse. Vérifiez le lien que vous avez suivi.",
	BadRoomTitle:     "Ce lien n’est pas correct",
	BadRoomBody:      "« {room} » ne peut pas être le nom d’une salle d’attente. Vérifiez le lien que vous avez suivi.",
	UnavailableTitle: "La file est en pause",
	UnavailableBody:  "La salle d’attente ne peut pas joindre ses données pour le moment, la file n’avance donc pas. Vous gardez votre place ; cette page va réessayer toute seule.",
	BusyTitle:        "Trop de monde à la fois",
	BusyBody:         "La salle d’attente n’accepte plus personne d’ici pour le moment. Cette page va réessayer toute seule.",
	ErrorTitle:       "Une erreur s’est produite",
	ErrorBody:        "Rechargez la page dans un instant.",
	CrossSiteTitle:   "Utilisez la page de ce site",
	CrossSiteBody:    "Un autre site a envoyé ce formulaire : rien n’a été changé et vous gardez votre place dans la file. Pour cela, utilisez le bouton de la page de la salle d’attente elle-même.",
	PreHeading:       "Vous participez au tirage au sort",
	OpensInLabel:     "La file ouvre dans",
	OpensAtLabel:     "Ouverture\u00a0:",
	TitleOpensIn:     "Ouvre dans {time}",
	EntrantsOne:      "{n} personne participe au tirage",
	EntrantsOther:    "{n} personnes participent au tirage",
	PreIntro:         "À l’ouverture, chaque personne de cette pré-file reçoit une place, dans un ordre aléatoire que chacun peut vérifier. Inutile de vous presser\u00a0: arriver plus tôt ne donne pas une meilleure place.",
	DrawLink:         "Vérifier le tirage",
	PreKeepOpen:      "Gardez cette page ouverte. Elle affichera votre place dès que le tirage aura eu lieu.",
	AnnounceOpensIn:  "La file ouvre dans {time}.",
	Drawing:          "Tirage au sort en cours…",
	AnnounceDrawn:    "Le tirage a eu lieu.",
	DrawnNote:        "Le tirage a eu lieu\u00a0: votre place a été tirée au sort.",
	DrawnIntro:       "Merci de votre patience. Nous faisons entrer les personnes une à une, dans l’ordre du tirage, pour que chacun passe à son tour.",
	ClockDays:        "{n} j {time}",
	MinuteOne:        "{n} minute",
	MinuteOther:      "{n} minutes",
	HourOne:          "{n} heure",
	HourOther:        "{n} heures",
	DayOne:           "{n} jour",
	DayOther:         "{n} jours",
	ClosedTitle:      "Cette file est fermée",
	ClosedBody:       "La salle d’attente n’accepte plus personne. Les personnes déjà dans la file passeront quand même.",
	StockLeft:        "Il en reste environ {n}",
	StockUnlikely:    "Il y a plus de personnes devant vous que d’articles restants, vous risquez donc de ne pas en avoir. Vous pouvez garder votre place au cas où certains reviendraient.",
	StockReserved:    "Tout ce qui reste est réservé pour le moment\u00a0; vous gardez votre place au cas où certains reviendraient.",
	SoldOutTitle:     "Épuisé",
	SoldOutBody:      "Tout a été vendu\u00a0; nous sommes désolés que vous n’en ayez pas eu cette fois-ci.",
	DoorHeading:      "Avant de rejoindre la file",
	DoorInviteOnly:   "Cette file est sur invitation. Ouvrez le lien de votre invitation, ou collez l’invitation ici.",
	DoorInvite:       "Invitation",
	DoorChecking:     "Nous vérifions votre navigateur avant que vous rejoigniez la file. Cela prend quelques secondes, sans aucun clic.",
	DoorProgress:     "Vérification en cours",
	DoorDone:         "C’est fait. Vous rejoignez la file…",
	DoorFailed:       "La vérification a échoué\u00a0; rechargez la page pour réessayer.",
	DoorNoScript:     "Cette salle demande à votre navigateur de résoudre une petite énigme avant d’entrer dans la file, ce qui nécessite JavaScript.",
	DoorJoin:         "Rejoindre la file",
	TierNote:         "Vous attendez dans la file {tier}.",
	TierGrows:        "Les personnes qui rejoignent un niveau supérieur passent avant vous\u00a0: votre position peut donc augmenter.",
	TierGrowsShare:   "Les niveaux supérieurs reçoivent une part des places\u00a0: ceux qui les rejoignent après vous peuvent passer avant vous, et votre position peut augmenter.",

	// The claim page of a held place.
	ClaimHeading:      "C’est votre tour",
	ClaimBody:         "Votre place vous est réservée encore {time}. Prenez-la maintenant pour entrer.",
	ClaimDeadline:     "Réservée jusqu’à",
	ClaimButton:       "Prendre ma place",
	ClaimWaitingTitle: "Ce n’est pas encore votre tour",
	ClaimWaitingBody:  "Votre place dans la file vous est réservée\u00a0: inutile de garder cette page ouverte. Nous vous préviendrons quand ce sera votre tour.",
	ClaimExpiredTitle: "Cette invitation a expiré",
	ClaimExpiredBody:  "Le délai pour prendre cette place est passé\u00a0; elle a été donnée à la personne suivante dans la file.",
	ClaimEndedBody:    "Cette place dans la file a pris fin\u00a0: il n’y a plus rien à prendre.",
	ClaimUnknownBody:  "Aucune place dans la file ne correspond à ce lien. Vérifiez le lien que vous avez reçu.",
}

// languages lists the supported languages; the first is the fallback.
var languages = []*Messages{&english, &german, &french}

// Languages returns the tags of the languages the pages speak, the fallback
// first.
func Languages() []string {
	tags := make([]string, len(languages))
	for i, m := range languages {
		tags[i] = m.Lang
	}
	return tags
}

// maxAcceptLanguage bounds the work spent on one Accept-Language header.
const maxAcceptLanguage = 32

// pickLanguage chooses the messages for an Accept-Language header: the
// supported language with the highest quality value (ties keep the header's
// order), matched on the primary subtag ("de-AT" is German). q=0 excludes a
// language; "*" stands for the fallback. Anything unparsable is skipped.
func pickLanguage(header string) *Messages {
	type choice struct {
		m *Messages
		q float64
	}
	var choices []choice
	for i, part := range strings.Split(header, ",") {
		if i >= maxAcceptLanguage {
			break
		}
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		tag = strings.ToLower(strings.TrimSpace(tag))
		q := 1.0
		for p := range strings.SplitSeq(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok || strings.TrimSpace(k) != "q" {
				continue
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
				q = -1
			} else {
				q = f
			}
		}
		if q <= 0 {
			continue
		}
		primary, _, _ := strings.Cut(tag, "-")
		if tag == "*" {
			choices = append(choices, choice{languages[0], q})
			continue
		}
		for _, m := range languages {
			if primary == m.Lang {
				choices = append(choices, choice{m, q})
				break
			}
		}
	}
	sort.SliceStable(choices, func(i, j int) bool { return choices[i].q > choices[j].q })
	if len(choices) == 0 {
		return languages[0]
	}
	return choices[0].m
}

// singular reports whether n takes the singular form in m's language: French
// uses it for 0 and 1, English and German for 1 only.
func (m *Messages) singular(n int64) bool {
	if m.Lang == "fr" {
		return n == 0 || n == 1
	}
	return n == 1
}

// number formats n with the language's digit grouping.
func (m *Messages) number(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if len(s) > 3 {
		sep := ","
		switch m.Lang {
		case "de":
			sep = "."
		case "fr":
			sep = "\u202f" // narrow no-break space, as Intl.NumberFormat writes it
		}
		var b strings.Builder
		for i, c := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteString(sep)
			}
			b.WriteRune(c)
		}
		s = b.String()
	}
	if neg {
		s = "-" + s
	}
	return s
}

// fill replaces the placeholders {name} in text with the given values,
// given as name, value pairs.
func fill(text string, pairs ...string) string {
	for i := 0; i+1 < len(pairs); i += 2 {
		text = strings.ReplaceAll(text, "{"+pairs[i]+"}", pairs[i+1])
	}
	return text
}

// announcement is the sentence a screen reader hears about a waiting
// session's place: its position and how many are ahead.
func (m *Messages) announcement(s waitroom.Session) string {
	first := fill(m.AnnouncePosition, "n", m.number(s.Position))
	ahead := s.Ahead()
	var second string
	switch {
	case ahead == 0:
		second = m.Next
	case ahead == 1:
		second = fill(m.AheadOne, "n", m.number(ahead))
	default:
		second = fill(m.AheadOther, "n", m.number(ahead))
	}
	return first + " " + second
}

// etaText says how long the wait is likely to be, rounded to whole minutes
// (or hours beyond two hours) so the text does not flicker from second to
// second. The page script (page.js) formats the same way.
func (m *Messages) etaText(e *waitroom.ETA) string {
	if e == nil {
		return m.ETAUnknown
	}
	lo := e.Low / 60
	hi := (e.High + 59) / 60
	if hi <= 1 {
		return m.ETAUnderMinute
	}
	lo = max(lo, 1)
	one, other, rng := m.ETAMinuteOne, m.ETAMinuteOther, m.ETAMinuteRange
	if hi > 120 {
		lo, hi = max(lo/60, 1), (hi+59)/60
		one, other, rng = m.ETAHourOne, m.ETAHourOther, m.ETAHourRange
	}
	if lo >= hi {
		if m.singular(hi) {
			return fill(one, "n", m.number(hi))
		}
		return fill(other, "n", m.number(hi))
	}
	return fill(rng, "low", m.number(lo), "high", m.number(hi))
}

// plural fills n into one or other, as the language's singular rule picks.
func (m *Messages) plural(n int64, one, other string) string {
	if m.singular(n) {
		return fill(one, "n", m.number(n))
	}
	return fill(other, "n", m.number(n))
}

// entrants says how many wait in a pre-queue: "1,234 people are in the draw".
func (m *Messages) entrants(n int) string {
	return m.plural(int64(n), m.EntrantsOne, m.EntrantsOther)
}

// countdown shows the time left until an opening as a clock, counting
// started seconds so that it reads 0:00 only at the opening itself: "4:05",
// "1:02:03", "2 d 01:02:03"; Drawing once the time is up. The page script
// (page.js) counts down the same way.
func (m *Messages) countdown(left time.Duration) string {
	if left <= 0 {
		return m.Drawing
	}
	secs := int64((left + time.Second - 1) / time.Second)
	days, h, mi, sec := secs/86400, secs/3600%24, secs/60%60, secs%60
	switch {
	case days > 0:
		return fill(m.ClockDays, "n", m.number(days), "time", fmt.Sprintf("%02d:%02d:%02d", h, mi, sec))
	case h > 0:
		return fmt.Sprintf("%d:%02d:%02d", h, mi, sec)
	}
	return fmt.Sprintf("%d:%02d", mi, sec)
}

// span says a time to go in words, coarse enough to read out: started
// minutes below two hours, then rounded hours below two days, then days.
// The page script (page.js) says it the same way.
func (m *Messages) span(left time.Duration) string {
	mins := max(int64((left+time.Minute-1)/time.Minute), 1)
	if mins < 120 {
		return m.plural(mins, m.MinuteOne, m.MinuteOther)
	}
	if hours := int64((left + 30*time.Minute) / time.Hour); hours < 48 {
		return m.plural(hours, m.HourOne, m.HourOther)
	}
	return m.plural(int64((left+12*time.Hour)/(24*time.Hour)), m.DayOne, m.DayOther)
}

// opensIn is the sentence a screen reader hears in a pre-queue: "The line
// opens in 5 minutes.", or Drawing once the time is up.
func (m *Messages) opensIn(left time.Duration) string {
	if left <= 0 {
		return m.Drawing
	}
	return fill(m.AnnounceOpensIn, "time", m.span(left))
}

// The stock states of a waiting session in a room with an inventory. The
// page script (page.js) tells them apart the same way.
const (
	stockLikely   = "likely"   // at most as many ahead as units left
	stockUnlikely = "unlikely" // more people ahead than units left
	stockReserved = "reserved" // none left, some reserved
)

// stockState is s's stock state: "" unless s waits in a room with an
// inventory. A session in a pre-queue has no place yet, so it is never
// told it is unlikely to get one.
func stockState(s waitroom.Session) string {
	switch {
	case !s.Stocked || s.Status != waitroom.StatusWaiting:
		return ""
	case s.Remaining <= 0:
		return stockReserved
	case s.Position > s.Remaining:
		return stockUnlikely
	}
	return stockLikely
}

// stockText says what is left ("About 12 left", "" when none is) and,
// when the session is unlikely to get one or none is left, why.
func (m *Messages) stockText(s waitroom.Session) (left, note string) {
	switch stockState(s) {
	case stockLikely:
		return fill(m.StockLeft, "n", m.number(s.Remaining)), ""
	case stockUnlikely:
		return fill(m.StockLeft, "n", m.number(s.Remaining)), m.StockUnlikely
	case stockReserved:
		return "", m.StockReserved
	}
	return "", ""
}
