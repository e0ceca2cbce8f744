"""A small embedded corpus for the synthetic suites, written for pointfail (no third-party text).

``SENTENCES[lang]``: everyday office, travel and household prose in English, German, French,
Spanish, Italian and Dutch, one sentence per string, ending in ``.``, ``!`` or ``?``, with commas,
colons and semicolons so punctuation targets exist. ``TITLES[lang]``: document titles.
``SHEET_WORDS[lang]``: short cell values (products, statuses, cities) for the sheets suite.

Languages follow PointerBench-Text's mix (pointerbench-paper.txt, appendix "PointerBench-Text":
50% English, 10% each German, French, Spanish, Italian, Dutch); :data:`LANGUAGE_WEIGHTS` encodes it.
"""

from __future__ import annotations

LANGUAGES: tuple[str, ...] = ("en", "de", "fr", "es", "it", "nl")
LANGUAGE_WEIGHTS: tuple[int, ...] = (5, 1, 1, 1, 1, 1)
"""Relative weights of :data:`LANGUAGES` (half English, the rest evenly)."""

SENTENCES: dict[str, tuple[str, ...]] = {
    "en": (
        "The quarterly report is due on Friday, so please send your figures before noon.",
        "Our team moved the weekly meeting to the small room on the second floor.",
        "If the printer jams again, open the side panel and remove the paper slowly.",
        "The new budget covers travel, training and two replacement laptops.",
        "Please review the attached draft and mark any changes in the margin.",
        "We expect the delivery to arrive early next week, weather permitting.",
        "The library closes at six on weekdays; on Saturdays it opens at ten.",
        "Remember to water the plants in the hallway while Maria is on holiday.",
        "The survey results show a clear preference for the morning schedule.",
        "Bring a warm jacket, because the evening ferry can get quite windy.",
        "Three volunteers signed up for the garden cleanup on Sunday morning.",
        "The invoice lists twelve chairs, but only ten were delivered.",
        "Could you check whether the backup finished without errors last night?",
        "Our kitchen supplier raised prices by four percent this spring.",
        "The museum offers free entry on the first Sunday of every month.",
        "After the update, the dashboard loads much faster than before.",
        "Please lock the storage room and return the key to reception.",
        "The bakery on the corner sells fresh bread until late afternoon.",
        "Note: the parking garage will be closed for repairs on Thursday.",
        "Most guests preferred the vegetable soup to the grilled fish.",
        "The train was delayed by twenty minutes because of a signal fault.",
        "Keep the receipts, since the accountant needs them for the annual review.",
        "Our neighbours painted their fence a bright shade of green.",
        "The workshop starts at nine sharp, and coffee will be served outside.",
    ),
    "de": (
        "Der Bericht für das dritte Quartal muss bis Freitag fertig sein.",
        "Bitte schicken Sie mir die Unterlagen noch vor der Mittagspause.",
        "Unser Team trifft sich jeden Montag im kleinen Besprechungsraum.",
        "Wenn der Drucker wieder klemmt, öffnen Sie bitte die seitliche Klappe.",
        "Die Lieferung kommt voraussichtlich Anfang nächster Woche an.",
        "Die Bibliothek schließt werktags um sechs; samstags öffnet sie um zehn.",
        "Vergiss nicht, die Pflanzen im Flur zu gießen, solange Anna verreist ist.",
        "Die Umfrage zeigt eine deutliche Vorliebe für den frühen Termin.",
        "Nehmen Sie eine warme Jacke mit, denn auf der Fähre wird es windig.",
        "Auf der Rechnung stehen zwölf Stühle, geliefert wurden aber nur zehn.",
        "Könnten Sie prüfen, ob die Sicherung heute Nacht fehlerfrei lief?",
        "Das Museum bietet am ersten Sonntag im Monat freien Eintritt.",
        "Nach dem Update lädt die Übersicht deutlich schneller als vorher.",
        "Hinweis: Die Tiefgarage bleibt am Donnerstag wegen Reparaturen geschlossen.",
        "Die Bäckerei an der Ecke verkauft frisches Brot bis zum späten Nachmittag.",
        "Der Zug hatte wegen einer Signalstörung zwanzig Minuten Verspätung.",
        "Bewahren Sie die Belege auf, denn die Buchhaltung braucht sie später.",
        "Die Schulung beginnt pünktlich um neun Uhr, Kaffee gibt es draußen.",
    ),
    "fr": (
        "Le rapport trimestriel doit être prêt avant vendredi midi.",
        "Merci de m'envoyer les documents signés dès que possible.",
        "Notre équipe se réunit chaque lundi dans la petite salle du deuxième étage.",
        "Si l'imprimante se bloque encore, ouvrez doucement le panneau latéral.",
        "La livraison devrait arriver au début de la semaine prochaine.",
        "La bibliothèque ferme à dix-huit heures; le samedi, elle ouvre à dix heures.",
        "N'oublie pas d'arroser les plantes du couloir pendant les vacances de Claire.",
        "Les résultats de l'enquête montrent une nette préférence pour le matin.",
        "Prenez une veste chaude, car le dernier bateau peut être très venteux.",
        "La facture mentionne douze chaises, mais seulement dix ont été livrées.",
        "Pouvez-vous vérifier si la sauvegarde s'est terminée sans erreur?",
        "Le musée propose l'entrée gratuite le premier dimanche de chaque mois.",
        "Depuis la mise à jour, le tableau de bord s'affiche beaucoup plus vite.",
        "Attention: le parking souterrain sera fermé jeudi pour travaux.",
        "La boulangerie du coin vend du pain frais jusqu'en fin d'après-midi.",
        "Le train avait vingt minutes de retard à cause d'une panne de signal.",
        "Gardez les reçus, car la comptable en aura besoin pour le bilan annuel.",
        "L'atelier commence à neuf heures précises, et le café sera servi dehors.",
    ),
    "es": (
        "El informe trimestral debe estar listo antes del viernes.",
        "Por favor, envíame los documentos firmados lo antes posible.",
        "Nuestro equipo se reúne cada lunes en la sala pequeña del segundo piso.",
        "Si la impresora vuelve a atascarse, abre con cuidado el panel lateral.",
        "El pedido llegará, con suerte, a principios de la semana que viene.",
        "La biblioteca cierra a las seis; los sábados abre a las diez.",
        "No olvides regar las plantas del pasillo mientras Lucía está de viaje.",
        "La encuesta muestra una clara preferencia por el horario de mañana.",
        "Lleva una chaqueta, porque el último ferry suele ser muy ventoso.",
        "La factura incluye doce sillas, pero solo entregaron diez.",
        "¿Puedes comprobar si la copia de seguridad terminó sin errores?",
        "El museo ofrece entrada gratuita el primer domingo de cada mes.",
        "Después de la actualización, el panel carga mucho más rápido.",
        "Aviso: el aparcamiento estará cerrado el jueves por reparaciones.",
        "La panadería de la esquina vende pan fresco hasta media tarde.",
        "El tren llegó con veinte minutos de retraso por una avería.",
        "Guarda los recibos, ya que la contable los necesita para el cierre anual.",
        "El taller empieza a las nueve en punto, y habrá café en la terraza.",
    ),
    "it": (
        "Il rapporto trimestrale deve essere pronto entro venerdì.",
        "Per favore, inviami i documenti firmati il prima possibile.",
        "Il nostro gruppo si riunisce ogni lunedì nella sala piccola al secondo piano.",
        "Se la stampante si blocca di nuovo, apri con calma il pannello laterale.",
        "La consegna dovrebbe arrivare all'inizio della prossima settimana.",
        "La biblioteca chiude alle sei; il sabato apre alle dieci.",
        "Non dimenticare di annaffiare le piante del corridoio mentre Giulia è via.",
        "Il sondaggio mostra una chiara preferenza per l'orario del mattino.",
        "Porta una giacca pesante, perché l'ultimo traghetto è spesso ventoso.",
        "La fattura riporta dodici sedie, ma ne sono arrivate solo dieci.",
        "Puoi controllare se il backup di stanotte è finito senza errori?",
        "Il museo offre l'ingresso gratuito la prima domenica di ogni mese.",
        "Dopo l'aggiornamento, il pannello si carica molto più velocemente.",
        "Avviso: il parcheggio sotterraneo resterà chiuso giovedì per lavori.",
        "La panetteria all'angolo vende pane fresco fino al tardo pomeriggio.",
        "Il treno ha avuto venti minuti di ritardo per un guasto al segnale.",
        "Conserva le ricevute, perché la contabile ne avrà bisogno a fine anno.",
        "Il laboratorio inizia alle nove in punto, e il caffè sarà servito fuori.",
    ),
    "nl": (
        "Het kwartaalverslag moet uiterlijk vrijdag klaar zijn.",
        "Stuur me alsjeblieft de ondertekende documenten zo snel mogelijk.",
        "Ons team vergadert elke maandag in de kleine zaal op de tweede verdieping.",
        "Als de printer weer vastloopt, open dan voorzichtig het zijpaneel.",
        "De levering komt waarschijnlijk begin volgende week aan.",
        "De bibliotheek sluit om zes uur; op zaterdag gaat ze om tien uur open.",
        "Vergeet niet de planten in de gang water te geven terwijl Sanne weg is.",
        "De enquête laat een duidelijke voorkeur voor de ochtend zien.",
        "Neem een warme jas mee, want op de laatste veerboot waait het hard.",
        "Op de factuur staan twaalf stoelen, maar er zijn er maar tien geleverd.",
        "Kun je nagaan of de back-up van vannacht zonder fouten is afgerond?",
        "Het museum is elke eerste zondag van de maand gratis toegankelijk.",
        "Na de update laadt het dashboard veel sneller dan eerst.",
        "Let op: de parkeergarage is donderdag gesloten wegens onderhoud.",
        "De bakker op de hoek verkoopt vers brood tot laat in de middag.",
        "De trein had twintig minuten vertraging door een seinstoring.",
        "Bewaar de bonnetjes, want de boekhouder heeft ze nodig voor de jaarafsluiting.",
        "De workshop begint om negen uur precies, en de koffie staat buiten klaar.",
    ),
}

TITLES: dict[str, tuple[str, ...]] = {
    "en": ("Meeting notes", "Office update", "Weekly summary", "Travel plans", "Project memo"),
    "de": ("Protokoll", "Wochenbericht", "Mitteilung", "Reiseplanung", "Projektnotiz"),
    "fr": ("Compte rendu", "Note interne", "Bilan hebdomadaire", "Voyage", "Mémo projet"),
    "es": ("Acta de reunión", "Nota interna", "Resumen semanal", "Viaje", "Memoria"),
    "it": ("Verbale", "Nota interna", "Riepilogo settimanale", "Viaggio", "Promemoria"),
    "nl": ("Notulen", "Interne notitie", "Weekoverzicht", "Reisplan", "Projectnotitie"),
}

SHEET_WORDS: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "product": ("Stapler", "Notebook", "Desk lamp", "Monitor", "Keyboard", "Headset", "Chair", "Printer"),
        "status": ("Paid", "Open", "Overdue", "Shipped", "Pending", "Closed", "Draft"),
        "city": ("Leeds", "Boston", "Dublin", "Denver", "Bristol", "Austin", "Perth", "Toronto"),
    },
    "de": {
        "product": ("Hefter", "Notizbuch", "Tischlampe", "Bildschirm", "Tastatur", "Kopfhörer", "Stuhl"),
        "status": ("Bezahlt", "Offen", "Überfällig", "Versandt", "Entwurf", "Erledigt"),
        "city": ("Köln", "Bremen", "Leipzig", "Graz", "Zürich", "Kassel", "Münster"),
    },
    "fr": {
        "product": ("Agrafeuse", "Cahier", "Lampe", "Écran", "Clavier", "Casque", "Chaise"),
        "status": ("Payé", "Ouvert", "En retard", "Expédié", "Brouillon", "Clôturé"),
        "city": ("Lyon", "Nantes", "Lille", "Genève", "Rennes", "Dijon", "Nîmes"),
    },
    "es": {
        "product": ("Grapadora", "Cuaderno", "Lámpara", "Pantalla", "Teclado", "Auriculares", "Silla"),
        "status": ("Pagado", "Abierto", "Vencido", "Enviado", "Borrador", "Cerrado"),
        "city": ("Sevilla", "Bilbao", "Málaga", "Valencia", "Córdoba", "Gijón", "Murcia"),
    },
    "it": {
        "product": ("Cucitrice", "Quaderno", "Lampada", "Monitor", "Tastiera", "Cuffie", "Sedia"),
        "status": ("Pagato", "Aperto", "Scaduto", "Spedito", "Bozza", "Chiuso"),
        "city": ("Torino", "Bologna", "Verona", "Parma", "Bari", "Trieste", "Lecce"),
    },
    "nl": {
        "product": ("Nietmachine", "Schrift", "Bureaulamp", "Beeldscherm", "Toetsenbord", "Koptelefoon", "Stoel"),
        "status": ("Betaald", "Open", "Te laat", "Verzonden", "Concept", "Gesloten"),
        "city": ("Utrecht", "Leiden", "Gent", "Zwolle", "Delft", "Breda", "Haarlem"),
    },
}

FIRST_NAMES: tuple[str, ...] = (
    "Priya", "Sam", "Ahmed", "Will", "Sofia", "Lena", "Marco", "Chloé", "Jan", "Elena", "Tom", "Aisha",
    "Lucas", "Mei", "Pablo", "Greta", "Noah", "Ines", "Omar", "Fleur",
)
LAST_NAMES: tuple[str, ...] = (
    "Choi", "Jensen", "Wang", "Keller", "Rossi", "Dubois", "Visser", "García", "Novak", "Okafor", "Berg",
    "Silva", "Moreau", "Bakker", "Conti", "Park",
)
