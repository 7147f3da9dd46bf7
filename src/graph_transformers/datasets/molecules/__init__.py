"""Molecular graphs: ZINC-12k (:mod:`.zinc`; its chemistry :mod:`.zinc_chemistry`, its raw files
:mod:`.zinc_files`), the MoleculeNet sets and ogbg-molhiv (:mod:`.moleculenet`), a user's molecule
CSV (:mod:`.molecule_csv`, read by :mod:`.csv_reading`), with the OGB featurization
(:mod:`.featurization`) and the scaffold split (:mod:`.scaffold`); OGB's published files
(:mod:`.ogb`, needs the ``[ogb]`` extra; found by :mod:`.ogb_files`), ogbg-molpcba
(:mod:`.molpcba`) and PCQM4M (:mod:`.pcqm4m`)."""
