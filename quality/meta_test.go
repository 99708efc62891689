package quality

import "testing"

// TestMetaPhrasesIntl puts assistant framing and ordinary prose of each
// corpus language at the start (openers) or the end (closers and the rest)
// of a good article: framing is rejected outright, prose passes. The first
// rows are the false refusal of real text: "İşte sizin için …" in a Turkish
// tutorial.
func TestMetaPhrasesIntl(t *testing.T) {
	g := newTestGate(t, Settings{})
	base := baseArticle(t, "good_tr_uzaktan.json")
	cases := []struct {
		text  string
		start bool
		meta  bool
	}{
		{"İşte sizin için birkaç pratik öneri: sabah rutininizi sabitleyin.", false, false},
		{"İşte sizin için hazırladığım makale.", false, true},
		{"İşte sizin için yazdığım blog yazısı.", false, true},
		// German.
		{"Natürlich! Hier ist ein Artikel über Homeoffice.", true, true},
		{"Möchten Sie, dass ich noch einen Abschnitt ergänze?", false, true},
		{"Lass mich wissen, wenn du Änderungen brauchst.", false, true},
		{"Als KI habe ich keine persönlichen Erfahrungen.", false, true},
		{"Natürlich ist Homeoffice nicht für jeden geeignet.", true, false},
		{"Hier ist der Artikel 5 des Grundgesetzes wichtig.", false, false},
		// Spanish.
		{"¡Claro! Aquí tienes el artículo sobre el teletrabajo.", true, true},
		{"¿Quieres que amplíe la sección sobre herramientas?", false, true},
		{"Como modelo de lenguaje, no tengo opiniones personales.", false, true},
		{"Claro que el teletrabajo tiene ventajas y desventajas.", true, false},
		{"Como ingeniero, aprendí a organizar mi día.", false, false},
		// French.
		{"Bien sûr ! Voici un article sur le télétravail.", true, true},
		{"Voulez-vous que je développe la dernière partie ?", false, true},
		{"N'hésitez pas à me demander d'autres exemples.", false, true},
		{"En tant qu'IA, je n'ai pas d'expérience personnelle.", false, true},
		{"Voici quelques conseils pour bien travailler chez soi.", false, false},
		{"Bien sûr, le télétravail demande de la discipline.", true, false},
		// Portuguese.
		{"Claro! Aqui está o artigo sobre trabalho remoto.", true, true},
		{"Você gostaria que eu adicionasse mais exemplos?", false, true},
		{"Espero que isso ajude!", false, true},
		{"Claro que o trabalho remoto exige disciplina.", true, false},
		// Dutch.
		{"Natuurlijk! Hier is een artikel over thuiswerken.", true, true},
		{"Wil je dat ik nog een voorbeeld toevoeg?", false, true},
		{"Laat me weten als je nog vragen hebt.", false, true},
		{"Natuurlijk is thuiswerken niet voor iedereen.", true, false},
		// Russian.
		{"Конечно! Вот статья о удалённой работе.", true, true},
		{"Хотите, чтобы я добавил ещё один раздел?", false, true},
		{"Как языковая модель, я не имею личного опыта.", false, true},
		{"Конечно, удалённая работа подходит не всем.", true, false},
		// Italian.
		{"Certo! Ecco l'articolo sul lavoro da remoto.", true, true},
		{"Vuoi che aggiunga una sezione sugli strumenti?", false, true},
		{"Fammi sapere se vuoi altre modifiche.", false, true},
		{"Certo, il lavoro da remoto richiede disciplina.", true, false},
		{"Ecco perché conviene fissare orari regolari.", false, false},
	}
	for _, c := range cases {
		a := base.clone()
		if c.start {
			a.Sections[0].Body = c.text + " " + a.Sections[0].Body
		} else {
			a.Sections[len(a.Sections)-1].Body += "\n\n" + c.text
		}
		r := g.Evaluate(a.json(t), Spec{})
		if _, hit := checkNamed(r, CheckMeta); hit != c.meta || r.Outright != c.meta {
			t.Errorf("%q: meta=%v outright=%v, want %v (%s)", c.text, hit, r.Outright, c.meta, r.Reasons())
		}
	}
}
