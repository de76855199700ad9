package web

import (
	"math"
	"sort"
	"strconv"
	"strings"

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
