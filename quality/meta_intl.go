package quality

// metaRulesIntl are the meta phrase patterns of German, Spanish, French,
// Portuguese, Dutch, Russian and Italian, on the token form (see tokenize:
// lower case, Turkish marks and í ì î û folded, other accents kept). Each
// needs the assistant's framing, not a phrase the language uses anyway:
// an opener is an interjection at the start of a field followed by a
// hand-over ("Natürlich! Hier ist …", "Bien sûr ! Voici …"), a closer
// offers the reader more in the first person ("Möchten Sie, dass ich …",
// "Voulez-vous que je …"), a self-description is "as an AI" followed by a
// comma or the first person. "Voici quelques conseils", "Claro que sí" and
// "Конечно, это сложно" pass.
var metaRulesIntl = []metaRule{
	// German.
	rule("chat opener", fieldStart, "", `^ (?:naturlich|gerne|gern|klar|sicher|selbstverst(?:a|ä)ndlich|absolut) (?:! |[,.:] (?:\S+ ){0,4}?(?:hier ist|hier sind|hier kommt|im folgenden|nachfolgend) )`),
	rule("here is the article", anywhere, "hier ist|hier sind", ` hier (?:ist|sind) (?:der|dein|ihr|die|deine|ihre) (?:gewunschte |angeforderte |gewunschten |angeforderten )?(?:artikel|blogbeitrag|beitrag|entwurf|text) (?:: |, |! |uber |zum |fur )`),
	rule("as an AI", anywhere, " als ", sStart+`als (?:eine |ein )?(?:ki|ki-sprachmodell|sprachmodell|ki-assistent|kunstliche intelligenz) , `),
	rule("as an AI", anywhere, " als ", ` als (?:eine |ein )?(?:ki|ki-sprachmodell|sprachmodell|ki-assistent) (?:habe|kann|bin) ich `),
	rule("chat closer", anywhere, "dass ich", ` (?:mochtest du|mochten sie|willst du|wollen sie|soll ich) , dass ich `),
	rule("chat closer", anywhere, "soll ich", ` soll ich (?:\S+ ){0,4}?(?:erweitern|erg(?:a|ä)nzen|anpassen|schreiben|hinzufugen|uberarbeiten|ausfuhren|kurzen) \? `),
	rule("chat closer", anywhere, "wissen|bescheid", ` (?:lass mich|lassen sie mich|sag mir|sagen sie mir) (?:gerne |gern )?(?:wissen|bescheid) , (?:wenn|ob|falls) `),
	rule("chat closer", anywhere, "ich hoffe", ` ich hoffe , (?:das|dies|es) hilft `),

	// Spanish.
	rule("chat opener", fieldStart, "", `^ (?:claro|por supuesto|desde luego|con gusto|perfecto|excelente pregunta) (?:! |[,.:] (?:\S+ ){0,4}?(?:aqui tienes|aqui esta|aqui está|aqui te dejo|a continuación|a continuacion) )`),
	rule("here is the article", anywhere, "aqui|te presento", ` (?:aqui tienes|aqui esta|aqui está|aqui te dejo|te presento) (?:el|tu|su) (?:\S+ ){0,3}?(?:articulo|entrada|post|texto|borrador) `),
	rule("as an AI", anywhere, " como ", sStart+`como (?:una |un )?(?:ia|modelo de lenguaje|modelo de ia|asistente de ia|asistente virtual|inteligencia artificial) , `),
	rule("as an AI", anywhere, " como ", ` como (?:una |un )?(?:ia|modelo de lenguaje) (?:, )?(?:no puedo|no tengo|yo) `),
	rule("chat closer", anywhere, " que ", ` (?:quieres|quiere|te gustaria|le gustaria|deseas|desea|prefieres) que (?:te |le )?(?:escriba|amplie|agregue|añada|anada|prepare|redacte|ajuste|incluya|continúe|continue|profundice) `),
	rule("chat closer", anywhere, "espero que", ` espero que (?:esto|esta guia|este articulo) (?:te|le|les) (?:ayude|sirva|sea util|sea útil) `),
	rule("chat closer", anywhere, " si ", ` (?:avisame|dime|hazme saber|hágame saber|hagame saber) si (?:necesitas|quieres|deseas|necesita|desea|prefieres) `),

	// French.
	rule("chat opener", fieldStart, "", `^ (?:bien sur|certainement|absolument|volontiers|avec plaisir|d'accord|parfait|excellente question) (?:! |[,.:] (?:\S+ ){0,4}?(?:voici|voila|voilà|ci-dessous) )`),
	rule("here is the article", anywhere, "voici|voila|voilà", ` (?:voici|voila|voilà) (?:l'article|votre article|ton article|le texte demandé|votre texte|ton texte) (?:demandé|que vous|que tu|: |, |! )`),
	rule("as an AI", anywhere, "en tant qu", sStart+`en tant qu(?:e |')(?:ia|intelligence artificielle|modèle de langage|modele de langage|assistant virtuel|assistant ia) , `),
	rule("as an AI", anywhere, "en tant qu", ` en tant qu(?:e |')(?:ia|intelligence artificielle|modèle de langage|modele de langage|assistant ia) (?:, )?je `),
	rule("chat closer", anywhere, "que je", ` (?:voulez-vous|veux-tu|souhaitez-vous|souhaites-tu|aimeriez-vous|voudriez-vous|aimerais-tu|voudrais-tu) que je `),
	rule("chat closer", anywhere, "n'hésitez|n'hesitez|n'hésite|n'hesite", ` n'h(?:é|e)site(?:z)? pas (?:à|a) me (?:demander|dire|contacter|faire savoir|solliciter) `),
	rule("chat closer", anywhere, "j'espère|j'espere", ` j'esp(?:è|e)re que (?:cela|ça|ca|ceci) (?:vous aide|t'aide|vous aidera|t'aidera|vous sera utile|te sera utile) `),
	rule("chat closer", anywhere, "dites-moi|dis-moi", ` (?:dites-moi|dis-moi) si (?:vous|tu) (?:voulez|veux|souhaitez|souhaites|avez besoin|as besoin) `),

	// Portuguese.
	rule("chat opener", fieldStart, "", `^ (?:claro|com certeza|certamente|com prazer|perfeito|ótimo|otimo) (?:! |[,.:] (?:\S+ ){0,4}?(?:aqui está|aqui esta|aqui vai|segue|a seguir|abaixo está|abaixo esta) )`),
	rule("here is the article", anywhere, "aqui|segue", ` (?:aqui está|aqui esta|aqui vai|segue) (?:o|seu|o seu|teu|o teu) (?:\S+ ){0,3}?(?:artigo|texto|post|rascunho) (?:solicitado|pedido|que você|que voce|: |, )`),
	rule("as an AI", anywhere, " como ", sStart+`como (?:uma |um )?(?:ia|modelo de linguagem|assistente de ia|assistente virtual|inteligência artificial|inteligencia artificial) , `),
	rule("chat closer", anywhere, "que eu", ` (?:quer|gostaria|você gostaria|voce gostaria|deseja|prefere) que eu `),
	rule("chat closer", anywhere, "espero que", ` espero que (?:isso|isto|este artigo|este guia) (?:ajude|te ajude|lhe ajude|seja útil|seja util) `),
	rule("chat closer", anywhere, " se ", ` (?:me avise|avise-me|me diga|diga-me) se (?:precisar|quiser|você|voce|desejar) `),

	// Dutch.
	rule("chat opener", fieldStart, "", `^ (?:natuurlijk|zeker|uiteraard|graag|prima) (?:! |[,.:] (?:\S+ ){0,4}?(?:hier is|hier zijn|hieronder) )`),
	rule("here is the article", anywhere, "hier is", ` hier is (?:je|uw|het gevraagde|jouw) (?:\S+ ){0,2}?(?:artikel|blogartikel|blogbericht|tekst|concept) `),
	rule("as an AI", anywhere, " als ", sStart+`als (?:een )?(?:ai|ai-taalmodel|taalmodel|ai-assistent|kunstmatige intelligentie) , `),
	rule("as an AI", anywhere, " als ", ` als (?:een )?(?:ai|ai-taalmodel|taalmodel|ai-assistent) (?:kan|heb|ben) ik `),
	rule("chat closer", anywhere, "dat ik", ` (?:wil je|wilt u|zou je willen|zou u willen) dat ik `),
	rule("chat closer", anywhere, "weten", ` laat (?:me|mij) (?:gerust |even )?weten (?:als|of) `),
	rule("chat closer", anywhere, "ik hoop", ` ik hoop dat (?:dit|dat) (?:helpt|je helpt|u helpt|nuttig is) `),

	// Russian.
	rule("chat opener", fieldStart, "", `^ (?:конечно|разумеется|безусловно|с удовольствием|отлично) (?:! |[,.:] (?:\S+ ){0,4}?(?:вот|ниже) )`),
	rule("here is the article", anywhere, " вот ", ` вот (?:ваша|твоя|готовая|запрошенная) (?:\S+ ){0,2}?(?:статья|текст) `),
	rule("as an AI", anywhere, " как ", sStart+`как (?:ии|ai|языковая модель|модель ии|искусственный интеллект|ии-ассистент|ассистент ии) , `),
	rule("as an AI", anywhere, " я ", ` я (?:всего лишь |лишь |просто )?(?:ии|языковая модель|искусственный интеллект|ии-ассистент) `),
	rule("chat closer", anywhere, "хотите|хочешь|желаете", ` (?:хотите|хочешь|желаете) , (?:чтобы я|я) `),
	rule("chat closer", anywhere, "надеюсь", ` надеюсь , (?:это|эта информация|эта статья) (?:поможет|помогла|была полезна|будет полезна) `),
	rule("chat closer", anywhere, "знать", ` (?:дайте|дай) (?:мне )?знать , если `),
	rule("chat closer", anywhere, "если", ` если (?:вам |тебе )?(?:нужно|нужна|понадобится) (?:что-то ещё|что-то еще|что-нибудь ещё|что-нибудь еще|ещё что-то|еще что-то) `),

	// Italian.
	rule("chat opener", fieldStart, "", `^ (?:certo|certamente|assolutamente|volentieri|perfetto|ottimo) (?:! |[,.:] (?:\S+ ){0,4}?(?:ecco|di seguito|qui sotto|qui di seguito) )`),
	rule("here is the article", anywhere, "ecco", ` ecco (?:l'articolo|il tuo articolo|il suo articolo|la bozza|il testo richiesto) (?:richiesto|che hai|: |, |! )`),
	rule("as an AI", anywhere, " come ", sStart+`come (?:un'|una |un )?(?:ia|intelligenza artificiale|modello linguistico|modello di linguaggio|assistente ia|assistente virtuale) , `),
	rule("chat closer", anywhere, " che ", ` (?:vuoi|vorresti|desideri|preferisci|vuole|vorrebbe|desidera) che (?:io |ti |le )?(?:scriva|aggiunga|ampli|espanda|prepari|crei|modifichi|approfondisca|riscriva) `),
	rule("chat closer", anywhere, "spero che", ` spero che (?:questo|questa guida|questo articolo) (?:ti |vi |le )?(?:aiuti|sia utile|sia stato utile) `),
	rule("chat closer", anywhere, "fammi sapere", ` fammi sapere se `),
}
